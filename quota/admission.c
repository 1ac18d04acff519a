/*
 * The admission-time policy of quota.h: LimitRange defaulting and
 * validation, extended-resource rules and ResourceQuota checks, with the
 * apiserver's wording so a user sees the same sentence whichever of
 * LimitRanger, ResourceQuota or gpuq refuses the work.
 */
#include "quota/quota.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* resource.MaxMilliValue: above it, MilliValue() would overflow int64. */
#define MAX_MILLI_VALUE (INT64_MAX / 1000)

/* ---- messages ---- */

/* One violation: container names are < 64 bytes, resource names < 128,
 * quantities < 48 and field paths < QUOTA_FIELD_PATH_MAX; the longest
 * sentence built here (a path, a resource name twice, a container name, two
 * quantities and about 200 bytes of text) fits 768. */
#define VIOLATION_MAX 768
/* A pod spec's field path (the workload layer keeps them under 96 bytes:
 * "spec.rayClusterSpec.workerGroupSpecs[17].template.spec") and
 * ".initContainers[N]" (64 was cut short at a JobSet's
 * "spec.replicatedJobs[0].template.spec.template.spec.containers[0", its
 * closing bracket lost: the edit storm's refusals). */
#define QUOTA_FIELD_PATH_MAX 160
/* Violations kept per decision; more could not fit GPUQ_DIAG_MAX anyway. */
#define VIOLATIONS_MAX 32

typedef struct {
	char msg[VIOLATIONS_MAX][VIOLATION_MAX]; /* distinct messages, in order */
	size_t n;				 /* messages kept */
} violations_t;

static void violation_add(violations_t *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void violation_add(violations_t *v, const char *fmt, ...)
{
	char buf[VIOLATION_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	for (size_t i = 0; i < v->n; i++)
		if (strcmp(v->msg[i], buf) == 0)
			return; /* NewAggregate reports a repeated message once */
	if (v->n < VIOLATIONS_MAX)
		memcpy(v->msg[v->n++], buf, sizeof(buf));
}

/* Append to a NUL-terminated buffer, truncating at cap. */
static void append(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void append(char *buf, size_t cap, const char *fmt, ...)
{
	size_t len = strnlen(buf, cap);
	va_list ap;

	if (len + 1 >= cap)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, cap - len, fmt, ap);
	va_end(ap);
}

/* Write v to diag joined with sep; brackets around several, as
 * utilerrors.NewAggregate writes them when bracket is set. */
static int violations_report(const violations_t *v, const char *sep, bool bracket,
			     gpuq_diag_t *diag)
{
	char out[GPUQ_DIAG_MAX] = "";

	if (v->n == 0)
		return GPUQ_OK;
	bracket = bracket && v->n > 1;
	if (bracket)
		append(out, sizeof(out), "[");
	for (size_t i = 0; i < v->n; i++)
		append(out, sizeof(out), "%s%s", i ? sep : "", v->msg[i]);
	if (bracket)
		append(out, sizeof(out), "]");
	return gpuq_diag_set(diag, GPUQ_EDENIED, "%s", out);
}

/* Canonical text of q (a zero quantity for NULL). */
static const char *qstr(const quota_qty_t *q, char *buf)
{
	quota_qty_t zero = {0, QUOTA_QTY_DECIMAL_SI};

	if (quota_qty_format(q ? q : &zero, buf, QUOTA_QTY_FMT_MAX))
		gpuq_strlcpy(buf, "?", QUOTA_QTY_FMT_MAX); /* cannot happen: FMT_MAX fits all */
	return buf;
}

/* ---- extended resources ---- */

/* "spec.initContainers[1]" of pod->containers[i]: its index among the
 * containers of its own list (pod->containers keeps each list's order). */
static void container_path(const quota_pod_t *pod, size_t i, const char *spec_field, char *buf,
			   size_t cap)
{
	bool app = pod->containers[i].kind == QUOTA_CONTAINER_APP;
	size_t index = 0;

	for (size_t k = 0; k < i; k++)
		if ((pod->containers[k].kind == QUOTA_CONTAINER_APP) == app)
			index++;
	snprintf(buf, cap, "%s%s%s[%zu]", spec_field ? spec_field : "", spec_field ? "." : "",
		 app ? "containers" : "initContainers", index);
}

/* The apiserver's field errors (pod validation of non-overcommitable
 * resources), each followed by how to fix it. */
static void extended_check_one(violations_t *v, const quota_container_t *c, const char *path,
			       const char *name)
{
	const quota_qty_t *req = quota_reslist_get(&c->requests, name);
	const quota_qty_t *lim = quota_reslist_get(&c->limits, name);
	char a[QUOTA_QTY_FMT_MAX], b[QUOTA_QTY_FMT_MAX];

	if (req && !lim)
		violation_add(v,
			      "%s.resources.limits: Required value: Limit must be set for non "
			      "overcommitable resources (container \"%s\" requests %s=%s: set "
			      "limits[%s] to %s as well)",
			      path, c->name, name, qstr(req, a), name, qstr(req, b));
	if (req && lim && quota_qty_cmp(req, lim) != 0)
		violation_add(v,
			      "%s.resources.requests[%s]: Invalid value: \"%s\": must be equal to "
			      "%s limit of %s (container \"%s\": extended resources cannot be "
			      "overcommitted, set request and limit to the same value, or set "
			      "only the limit)",
			      path, name, qstr(req, a), name, qstr(lim, b), c->name);
	if (req && !quota_qty_is_integer(req)) {
		quota_qty_t up = quota_qty_from_units(quota_qty_units(req), QUOTA_QTY_DECIMAL_SI);

		violation_add(v,
			      "%s.resources.requests[%s]: Invalid value: \"%s\": must be an "
			      "integer (container \"%s\": extended resources are allocated in "
			      "whole units, use e.g. %s)",
			      path, name, qstr(req, a), c->name, qstr(&up, b));
	}
	if (lim && !quota_qty_is_integer(lim) && !(req && quota_qty_cmp(req, lim) == 0)) {
		quota_qty_t up = quota_qty_from_units(quota_qty_units(lim), QUOTA_QTY_DECIMAL_SI);

		violation_add(v,
			      "%s.resources.limits[%s]: Invalid value: \"%s\": must be an "
			      "integer (container \"%s\": extended resources are allocated in "
			      "whole units, use e.g. %s)",
			      path, name, qstr(lim, a), c->name, qstr(&up, b));
	}
}

/* Whether name is as the apiserver wants it in c: a limit, whole, and the
 * request (if any) equal to it. The usual case, told without building the
 * container's field path (extended_check_one finds nothing then). */
static bool extended_fine(const quota_container_t *c, const char *name)
{
	const quota_qty_t *req = quota_reslist_get(&c->requests, name);
	const quota_qty_t *lim = quota_reslist_get(&c->limits, name);

	return lim && quota_qty_is_integer(lim) && (!req || quota_qty_cmp(req, lim) == 0);
}

/* extended_check_one of container i for name, unless it is fine; path
 * (built once per container, *have_path) is its field path. */
static void extended_check(violations_t *v, const quota_pod_t *pod, size_t i,
			   const char *spec_field, const char *name, char *path, bool *have_path)
{
	if (extended_fine(&pod->containers[i], name))
		return;
	if (!*have_path)
		container_path(pod, i, spec_field, path, QUOTA_FIELD_PATH_MAX);
	*have_path = true;
	extended_check_one(v, &pod->containers[i], path, name);
}

int quota_extended_validate(const quota_pod_t *pod, const char *spec_field, gpuq_diag_t *diag)
{
	violations_t v;
	char path[QUOTA_FIELD_PATH_MAX];

	v.n = 0;
	for (size_t i = 0; i < pod->n_containers; i++) {
		const quota_container_t *c = &pod->containers[i];
		bool have_path = false;

		for (size_t k = 0; k < c->requests.n; k++)
			if (quota_res_is_extended(c->requests.items[k].name))
				extended_check(&v, pod, i, spec_field, c->requests.items[k].name,
					       path, &have_path);
		for (size_t k = 0; k < c->limits.n; k++) {
			const char *name = c->limits.items[k].name;

			if (quota_res_is_extended(name) && !quota_reslist_get(&c->requests, name))
				extended_check(&v, pod, i, spec_field, name, path, &have_path);
		}
	}
	return violations_report(&v, "; ", false, diag);
}

/* ---- LimitRange defaulting ---- */

/* Set name in both the working list and the additions. */
static int fill(quota_reslist_t *cur, quota_reslist_t *added, const char *name,
		const quota_qty_t *q)
{
	int rc = quota_reslist_set(cur, name, q);

	if (!rc)
		rc = quota_reslist_set(added, name, q);
	return rc;
}

/* dst[name] = src[name] for every name of src missing from dst. Into an
 * empty dst (the usual case: one Container item) that is a copy, src's
 * names being unique. */
static int set_missing(quota_reslist_t *dst, const quota_reslist_t *src)
{
	if (dst->n == 0) {
		quota_reslist_copy(dst, src);
		return GPUQ_OK;
	}
	for (size_t i = 0; i < src->n; i++) {
		int rc;

		if (quota_reslist_get(dst, src->items[i].name))
			continue;
		rc = quota_reslist_set(dst, src->items[i].name, &src->items[i].qty);
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* dst[name] = src[name] for every name of src (overwriting); a copy into
 * an empty dst, as set_missing. */
static int set_all(quota_reslist_t *dst, const quota_reslist_t *src)
{
	if (dst->n == 0) {
		quota_reslist_copy(dst, src);
		return GPUQ_OK;
	}
	for (size_t i = 0; i < src->n; i++) {
		int rc = quota_reslist_set(dst, src->items[i].name, &src->items[i].qty);

		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* The default limits and requests of one LimitRange: its Container items,
 * each with the apiserver's item defaulting, later items overwriting. */
static int range_defaults(const quota_limitrange_t *lr, quota_reslist_t *lim, quota_reslist_t *req)
{
	int rc = GPUQ_OK;

	lim->n = 0;
	req->n = 0;
	for (size_t i = 0; i < lr->n_items && !rc; i++) {
		const quota_lr_item_t *it = &lr->items[i];
		quota_reslist_t def, def_req;

		if (it->type != QUOTA_LR_CONTAINER)
			continue;
		quota_reslist_copy(&def, &it->def);
		quota_reslist_copy(&def_req, &it->def_request);
		rc = set_missing(&def, &it->max); /* default limit <- max */
		if (!rc)
			rc = set_missing(&def_req, &def); /* default request <- default */
		if (!rc)
			rc = set_missing(&def_req, &it->min); /* ... <- min */
		if (!rc)
			rc = set_all(lim, &def);
		if (!rc)
			rc = set_all(req, &def_req);
	}
	return rc;
}

/* Every limit without a request becomes the request too. */
static int requests_from_limits(quota_reslist_t *req, const quota_reslist_t *lim,
				quota_reslist_t *add_req)
{
	for (size_t i = 0; i < lim->n; i++) {
		int rc;

		if (quota_reslist_get(req, lim->items[i].name))
			continue;
		rc = fill(req, add_req, lim->items[i].name, &lim->items[i].qty);
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

int quota_limitrange_default(const quota_limitrange_t *const *ranges, size_t n_ranges,
			     const quota_container_t *c, quota_reslist_t *add_requests,
			     quota_reslist_t *add_limits)
{
	quota_reslist_t req, lim, dlim, dreq;
	int rc;

	quota_reslist_copy(&req, &c->requests);
	quota_reslist_copy(&lim, &c->limits);
	add_requests->n = 0; /* entries past n are never read */
	add_limits->n = 0;
	rc = requests_from_limits(&req, &lim, add_requests);
	for (size_t r = 0; r < n_ranges && !rc; r++) {
		rc = range_defaults(ranges[r], &dlim, &dreq);
		for (size_t i = 0; i < dlim.n && !rc; i++)
			if (!quota_reslist_get(&lim, dlim.items[i].name))
				rc = fill(&lim, add_limits, dlim.items[i].name, &dlim.items[i].qty);
		for (size_t i = 0; i < dreq.n && !rc; i++)
			if (!quota_reslist_get(&req, dreq.items[i].name))
				rc = fill(&req, add_requests, dreq.items[i].name,
					  &dreq.items[i].qty);
	}
	/* only a limit a range added can lack a request now */
	if (!rc && add_limits->n)
		rc = requests_from_limits(&req, &lim, add_requests);
	return rc;
}

/* ---- LimitRange validation ---- */

typedef struct {
	const char *type;	    /* "Container" or "Pod" */
	const quota_reslist_t *req; /* requests (defaulted) */
	const quota_reslist_t *lim; /* limits */
} observed_t;

/* Whether quota_qty_units(q) <= MAX_MILLI_VALUE, told without dividing:
 * units are nano-units / 10^9 rounded up (away from zero), so they are at
 * most M exactly when nano <= M * 10^9 (a negative q always is). */
static bool milli_fits(const quota_qty_t *q)
{
	return q->nano <= (__int128)MAX_MILLI_VALUE * 1000000000;
}

/* requestLimitEnforcedValues: whole units, or thousandths when all three
 * fit, each rounded up. */
static void common_precision(const quota_qty_t *req, const quota_qty_t *lim, const quota_qty_t *enf,
			     int64_t *r, int64_t *l, int64_t *e)
{
	quota_qty_t zero = {0, QUOTA_QTY_DECIMAL_SI};

	req = req ? req : &zero;
	lim = lim ? lim : &zero;
	if (milli_fits(req) && milli_fits(lim) && milli_fits(enf)) {
		*r = quota_qty_milli(req);
		*l = quota_qty_milli(lim);
		*e = quota_qty_milli(enf);
	} else {
		*r = quota_qty_units(req);
		*l = quota_qty_units(lim);
		*e = quota_qty_units(enf);
	}
}

static void min_check(violations_t *v, const observed_t *o, const quota_res_t *enf)
{
	const quota_qty_t *req = quota_reslist_get(o->req, enf->name);
	const quota_qty_t *lim = quota_reslist_get(o->lim, enf->name);
	char a[QUOTA_QTY_FMT_MAX], b[QUOTA_QTY_FMT_MAX];
	int64_t r, l, e;

	common_precision(req, lim, &enf->qty, &r, &l, &e);
	if (!req)
		violation_add(v, "minimum %s usage per %s is %s.  No request is specified",
			      enf->name, o->type, qstr(&enf->qty, a));
	else if (r < e)
		violation_add(v, "minimum %s usage per %s is %s, but request is %s", enf->name,
			      o->type, qstr(&enf->qty, a), qstr(req, b));
	else if (lim && l < e)
		violation_add(v, "minimum %s usage per %s is %s, but limit is %s", enf->name,
			      o->type, qstr(&enf->qty, a), qstr(lim, b));
}

static void max_check(violations_t *v, const observed_t *o, const quota_res_t *enf)
{
	const quota_qty_t *req = quota_reslist_get(o->req, enf->name);
	const quota_qty_t *lim = quota_reslist_get(o->lim, enf->name);
	char a[QUOTA_QTY_FMT_MAX], b[QUOTA_QTY_FMT_MAX];
	int64_t r, l, e;

	common_precision(req, lim, &enf->qty, &r, &l, &e);
	if (!lim)
		violation_add(v, "maximum %s usage per %s is %s.  No limit is specified", enf->name,
			      o->type, qstr(&enf->qty, a));
	else if (l > e)
		violation_add(v, "maximum %s usage per %s is %s, but limit is %s", enf->name,
			      o->type, qstr(&enf->qty, a), qstr(lim, b));
	else if (req && r > e)
		violation_add(v, "maximum %s usage per %s is %s, but request is %s", enf->name,
			      o->type, qstr(&enf->qty, a), qstr(req, b));
}

static void ratio_check(violations_t *v, const observed_t *o, const quota_res_t *enf)
{
	const quota_qty_t *req = quota_reslist_get(o->req, enf->name);
	const quota_qty_t *lim = quota_reslist_get(o->lim, enf->name);
	char a[QUOTA_QTY_FMT_MAX];
	int64_t r, l, e;
	double ratio, observed, allowed;

	common_precision(req, lim, &enf->qty, &r, &l, &e);
	if (!req || r == 0) {
		violation_add(v,
			      "%s max limit to request ratio per %s is %s, but no request is "
			      "specified or request is 0",
			      enf->name, o->type, qstr(&enf->qty, a));
		return;
	}
	if (!lim || l == 0) {
		violation_add(v,
			      "%s max limit to request ratio per %s is %s, but no limit is "
			      "specified or limit is 0",
			      enf->name, o->type, qstr(&enf->qty, a));
		return;
	}
	/* The apiserver compares in floating point and prints %f: so do we. */
	ratio = (double)l / (double)r;
	observed = ratio;
	allowed = (double)quota_qty_units(&enf->qty);
	if (quota_qty_units(&enf->qty) <= MAX_MILLI_VALUE) {
		observed = ratio * 1000;
		allowed = (double)quota_qty_milli(&enf->qty);
	}
	if (observed > allowed)
		violation_add(
		    v, "%s max limit to request ratio per %s is %s, but provided ratio is %f",
		    enf->name, o->type, qstr(&enf->qty, a), ratio);
}

static void item_check(violations_t *v, const quota_lr_item_t *it, const observed_t *o)
{
	for (size_t k = 0; k < it->min.n; k++)
		min_check(v, o, &it->min.items[k]);
	for (size_t k = 0; k < it->max.n; k++)
		max_check(v, o, &it->max.items[k]);
	for (size_t k = 0; k < it->max_ratio.n; k++)
		ratio_check(v, o, &it->max_ratio.items[k]);
}

/* Container items: app containers first, then init and sidecar ones, as the
 * apiserver walks spec.containers then spec.initContainers. */
static int container_items_check(violations_t *v, const quota_lr_item_t *it, const quota_pod_t *pod)
{
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < pod->n_containers; i++) {
			const quota_container_t *c = &pod->containers[i];
			quota_reslist_t req;
			observed_t o = {"Container", &req, &c->limits};
			int rc;

			if ((c->kind == QUOTA_CONTAINER_APP) != (pass == 0))
				continue;
			rc = quota_container_requests(c, &req);
			if (rc)
				return rc;
			item_check(v, it, &o);
		}
	}
	return GPUQ_OK;
}

int quota_limitrange_validate(const quota_limitrange_t *const *ranges, size_t n_ranges,
			      const quota_pod_t *pod, gpuq_diag_t *diag)
{
	quota_reslist_t req, lim;

	return quota_limitrange_validate_totals(ranges, n_ranges, pod, &req, &lim, diag);
}

int quota_limitrange_validate_totals(const quota_limitrange_t *const *ranges, size_t n_ranges,
				     const quota_pod_t *pod, quota_reslist_t *req,
				     quota_reslist_t *lim, gpuq_diag_t *diag)
{
	quota_pod_t bare;
	violations_t v;
	int rc;

	/* LimitRanger aggregates the pod without overhead (not copied: only
	 * the containers and an empty overhead are read). */
	bare.containers = pod->containers;
	bare.n_containers = pod->n_containers;
	bare.overhead.n = 0;
	rc = quota_pod_requests(&bare, req);
	if (!rc)
		rc = quota_pod_limits(&bare, lim);
	if (rc)
		return gpuq_diag_set(diag, rc, "cannot total the pod's resources: %s",
				     gpuq_strerror(rc));
	for (size_t r = 0; r < n_ranges; r++) {
		v.n = 0;
		for (size_t i = 0; i < ranges[r]->n_items; i++) {
			const quota_lr_item_t *it = &ranges[r]->items[i];
			observed_t o = {"Pod", req, lim};

			if (it->type == QUOTA_LR_CONTAINER) {
				rc = container_items_check(&v, it, pod);
				if (rc)
					return gpuq_diag_set(diag, rc, "container resources: %s",
							     gpuq_strerror(rc));
			} else if (it->type == QUOTA_LR_POD) {
				item_check(&v, it, &o);
			}
		}
		if (v.n)
			return violations_report(&v, ", ", true, diag);
	}
	return GPUQ_OK;
}

/* ---- ResourceQuota ---- */

/* The name tests below run for every hard entry of every quota of a
 * review: each tells most names at their first byte. */
static bool is_compute(const char *name)
{
	switch (name[0]) {
	case 'c':
		return strcmp(name, "cpu") == 0;
	case 'm':
		return strcmp(name, "memory") == 0;
	case 'e':
		return strcmp(name, "ephemeral-storage") == 0;
	default:
		return false;
	}
}

static bool is_hugepages(const char *name)
{
	return name[0] == 'h' && strncmp(name, "hugepages-", 10) == 0;
}

/* The usage the pod evaluator charges against hard entry `hard`, or NULL
 * when it charges none. pods_qty holds the pod count. */
static const quota_qty_t *usage_for(const char *hard, const quota_reslist_t *req,
				    const quota_reslist_t *lim, const quota_qty_t *pods_qty)
{
	if ((hard[0] == 'p' && strcmp(hard, "pods") == 0) ||
	    (hard[0] == 'c' && strcmp(hard, "count/pods") == 0))
		return pods_qty;
	if (hard[0] == 'r' && strncmp(hard, "requests.", 9) == 0) {
		const char *base = hard + 9;

		if (is_compute(base) || is_hugepages(base) || quota_res_is_extended(base))
			return req ? quota_reslist_get(req, base) : NULL;
		return NULL;
	}
	if (hard[0] == 'l' && strncmp(hard, "limits.", 7) == 0)
		return is_compute(hard + 7) && lim ? quota_reslist_get(lim, hard + 7) : NULL;
	if (is_compute(hard) || is_hugepages(hard))
		return req ? quota_reslist_get(req, hard) : NULL;
	return NULL;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Append "name=value,name=value" for the sorted names, taking values from
 * list (0 when absent or when list is NULL). */
static void append_list(char *out, size_t cap, const char *const *names, size_t n,
			const quota_reslist_t *list)
{
	char q[QUOTA_QTY_FMT_MAX];

	for (size_t i = 0; i < n; i++)
		append(out, cap, "%s%s=%s", i ? "," : "", names[i],
		       qstr(list ? quota_reslist_get(list, names[i]) : NULL, q));
}

/* Whether one scope entry holds for the pod. */
static bool scope_holds(const quota_scope_t *s, const quota_pod_scope_t *pod)
{
	const char *cls = pod->priority_class && *pod->priority_class ? pod->priority_class : NULL;
	bool in = false;

	switch (s->scope) {
	case QUOTA_SCOPE_TERMINATING:
		return pod->terminating;
	case QUOTA_SCOPE_NOT_TERMINATING:
		return !pod->terminating;
	case QUOTA_SCOPE_BEST_EFFORT:
		return pod->best_effort;
	case QUOTA_SCOPE_NOT_BEST_EFFORT:
		return !pod->best_effort;
	case QUOTA_SCOPE_CROSS_NS_AFFINITY:
		return pod->cross_ns_affinity;
	case QUOTA_SCOPE_PRIORITY_CLASS:
		break;
	default:
		return false; /* a scope of other objects: no pod is in it */
	}
	for (size_t i = 0; cls && i < s->n_values; i++)
		in = in || !strcmp(s->values[i], cls);
	switch (s->op) {
	case QUOTA_SCOPE_EXISTS:
		return cls != NULL;
	case QUOTA_SCOPE_DOES_NOT_EXIST:
		return cls == NULL;
	case QUOTA_SCOPE_IN:
		return in;
	default:
		return !in; /* NotIn: also a pod of no class */
	}
}

bool quota_resourcequota_applies(const quota_resourcequota_t *rq, const quota_pod_scope_t *pod)
{
	for (size_t i = 0; pod && i < rq->n_scopes; i++)
		if (!scope_holds(&rq->scopes[i], pod))
			return false;
	return true;
}

int quota_resourcequota_check(const quota_resourcequota_t *const *quotas, size_t n_quotas,
			      const quota_pod_scope_t *scope, const quota_reslist_t *requests,
			      const quota_reslist_t *limits, int64_t pods, unsigned flags,
			      gpuq_diag_t *diag)
{
	return quota_resourcequota_check_used(quotas, NULL, n_quotas, scope, requests, limits, pods,
					      flags, diag);
}

int quota_resourcequota_check_used(const quota_resourcequota_t *const *quotas,
				   const quota_reslist_t *const *used_now, size_t n_quotas,
				   const quota_pod_scope_t *scope, const quota_reslist_t *requests,
				   const quota_reslist_t *limits, int64_t pods, unsigned flags,
				   gpuq_diag_t *diag)
{
	quota_qty_t pods_qty = quota_qty_from_units(pods, QUOTA_QTY_DECIMAL_SI);

	for (size_t qi = 0; qi < n_quotas; qi++) {
		const quota_resourcequota_t *rq = quotas[qi];
		const quota_reslist_t *used = (flags & QUOTA_RQ_IGNORE_USED) ? NULL
					      : used_now && used_now[qi]     ? used_now[qi]
									     : &rq->used;
		const char *exceeded[QUOTA_RESLIST_MAX];
		quota_reslist_t requested;
		char out[GPUQ_DIAG_MAX];
		size_t n = 0;

		if (!quota_resourcequota_applies(rq, scope))
			continue;
		requested.n = 0;
		for (size_t h = 0; h < rq->hard.n; h++) {
			const quota_res_t *hard = &rq->hard.items[h];
			const quota_qty_t *u =
			    usage_for(hard->name, requests, limits, pods > 0 ? &pods_qty : NULL);
			const quota_qty_t *was = used ? quota_reslist_get(used, hard->name) : NULL;
			quota_qty_t total;
			int rc;

			if (!u)
				continue;
			total = *u;
			rc = was ? quota_qty_add(was, u, &total) : GPUQ_OK;
			/* passing 2^63-1 units (rc != 0) exceeds any hard limit */
			if (rc == GPUQ_OK && quota_qty_cmp(&total, &hard->qty) <= 0)
				continue;
			exceeded[n++] = hard->name;
			/* hard names are unique and within the cap: set cannot fail */
			rc = quota_reslist_set(&requested, hard->name, u);
			GPUQ_ASSERT(rc == GPUQ_OK);
		}
		if (n == 0)
			continue;
		qsort(exceeded, n, sizeof(exceeded[0]), cmp_name);
		out[0] = '\0';
		append(out, sizeof(out), "exceeded quota: %s, requested: ", rq->name);
		append_list(out, sizeof(out), exceeded, n, &requested);
		append(out, sizeof(out), ", used: ");
		append_list(out, sizeof(out), exceeded, n, used);
		append(out, sizeof(out), ", limited: ");
		append_list(out, sizeof(out), exceeded, n, &rq->hard);
		return gpuq_diag_set(diag, GPUQ_EDENIED, "%s", out);
	}
	return GPUQ_OK;
}

/* Does container c (requests req, defaulted) set validation-set resource
 * `name` (cpu, memory, or their requests./limits. forms)? */
static bool container_sets(const quota_container_t *c, const quota_reslist_t *req, const char *name)
{
	if (strncmp(name, "limits.", 7) == 0)
		return quota_reslist_get(&c->limits, name + 7) != NULL;
	if (strncmp(name, "requests.", 9) == 0)
		name += 9;
	return quota_reslist_get(req, name) != NULL;
}

static const char *const validation_set[] = {
    "cpu", "limits.cpu", "limits.memory", "memory", "requests.cpu", "requests.memory",
}; /* sorted, so the message lists resources in order */

/* Append the sorted, distinct names of the containers that miss `name`. */
static int append_missing(char *out, size_t cap, const quota_pod_t *pod, const char *name)
{
	const char *last = NULL;

	for (;;) {
		const char *next = NULL;

		for (size_t i = 0; i < pod->n_containers; i++) {
			const quota_container_t *c = &pod->containers[i];
			quota_reslist_t req;
			int rc = quota_container_requests(c, &req);

			if (rc)
				return rc;
			if (container_sets(c, &req, name))
				continue;
			if ((!last || strcmp(c->name, last) > 0) &&
			    (!next || strcmp(c->name, next) < 0))
				next = c->name;
		}
		if (!next)
			return GPUQ_OK;
		append(out, cap, "%s%s", last ? "," : "", next);
		last = next;
	}
}

/* Does some container miss `name`? */
static bool any_missing(const quota_pod_t *pod, const char *name)
{
	for (size_t i = 0; i < pod->n_containers; i++) {
		quota_reslist_t req;

		if (quota_container_requests(&pod->containers[i], &req) ||
		    !container_sets(&pod->containers[i], &req, name))
			return true;
	}
	return false;
}

int quota_resourcequota_constraints(const quota_resourcequota_t *const *quotas, size_t n_quotas,
				    const quota_pod_t *pod, gpuq_diag_t *diag)
{
	for (size_t qi = 0; qi < n_quotas; qi++) {
		char out[GPUQ_DIAG_MAX] = "";
		bool first = true;
		int rc;

		for (size_t k = 0; k < sizeof(validation_set) / sizeof(validation_set[0]); k++) {
			const char *name = validation_set[k];

			if (!quota_reslist_get(&quotas[qi]->hard, name) || !any_missing(pod, name))
				continue;
			if (first)
				append(out, sizeof(out), "failed quota: %s: must specify ",
				       quotas[qi]->name);
			append(out, sizeof(out), "%s%s for: ", first ? "" : "; ", name);
			rc = append_missing(out, sizeof(out), pod, name);
			if (rc)
				return gpuq_diag_set(diag, rc, "container resources: %s",
						     gpuq_strerror(rc));
			first = false;
		}
		if (!first)
			return gpuq_diag_set(diag, GPUQ_EDENIED, "%s", out);
	}
	return GPUQ_OK;
}

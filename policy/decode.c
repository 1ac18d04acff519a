/*
 * Decoding objects from jansson values with the shared field decoder
 * (jdec.c): the policy's own field types (arena strings, quantities,
 * resource lists, labels, selectors), Kubernetes name rules, the kind
 * dispatch, and the core kinds (Namespace, LimitRange, ResourceQuota,
 * PriorityClass, ResourceClaimTemplate). The queueing kinds are in
 * decode_queue.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger/ledger.h"
#include "policy/internal.h"

/* ---- Policy field types over the shared decoder (policy_json.h) ---- */

static bool in_list(const char *s, const char *const *list)
{
	for (; list && *list; list++)
		if (!strcmp(s, *list))
			return true;
	return false;
}

/* v (at the path) as a string of at most max bytes, copied into the arena. */
static int str_value(policy_dec_t *d, const json_t *v, size_t max, const char **out)
{
	const char *s;
	int rc = policy_jdec_str_value(&d->j, v, max, &s);

	if (rc)
		return rc;
	*out = policy_arena_strdup(&d->p->arena, s);
	return *out ? GPUQ_OK : policy_oom(d->j.diag);
}

int policy_dec_str(policy_dec_t *d, const json_t *obj, const char *key, bool required, size_t max,
		   const char **out)
{
	const char *s = NULL;
	int rc = policy_jdec_str(&d->j, obj, key, required, max, &s);

	if (rc || !s)
		return rc;
	*out = policy_arena_strdup(&d->p->arena, s);
	return *out ? GPUQ_OK : policy_oom(d->j.diag);
}

int policy_dec_qty_value(policy_dec_t *d, const json_t *v, quota_qty_t *out)
{
	char text[QUOTA_QTY_STR_MAX + 1], val[128];
	gpuq_diag_t ignored;
	const char *s = text;
	quota_qty_t q;

	if (json_is_string(v))
		s = json_string_value(v);
	else if (json_is_number(v))
		policy_jdec_value(v, text, sizeof(text)); /* 8, or 0.1 as written */
	else
		return policy_jdec_want(&d->j, v, "a quantity");
	policy_jdec_value(v, val, sizeof(val));
	if (quota_qty_parse(s, strlen(s), &q, &ignored))
		return policy_jdec_fail(&d->j, GPUQ_EINVAL, "invalid quantity %s", val);
	if (q.nano < 0)
		return policy_jdec_fail(&d->j, GPUQ_EINVAL, "must not be negative, not %s", val);
	*out = q;
	return GPUQ_OK;
}

int policy_dec_qty(policy_dec_t *d, const json_t *obj, const char *key, bool required,
		   quota_qty_t *out, bool *present)
{
	const json_t *v;
	size_t old;
	int rc = policy_jdec_member(&d->j, obj, key, required, &v);

	if (present)
		*present = false;
	if (rc || !v)
		return rc;
	old = policy_jdec_key(&d->j, key);
	rc = policy_dec_qty_value(d, v, out);
	policy_jdec_pop(&d->j, old);
	if (rc == GPUQ_OK && present)
		*present = true;
	return rc;
}

int policy_dec_weight(policy_dec_t *d, const json_t *obj, const char *key, int64_t *milli)
{
	quota_qty_t q;
	bool present;
	int rc = policy_dec_qty(d, obj, key, false, &q, &present);

	*milli = 1000;
	if (rc == GPUQ_OK && present)
		*milli = quota_qty_milli(&q);
	return rc;
}

int policy_dec_reslist(policy_dec_t *d, const json_t *obj, const char *key, quota_reslist_t *list)
{
	const json_t *map = NULL, *v;
	const char *name;
	size_t old, old2;
	int rc = policy_jdec_obj(&d->j, obj, key, false, &map);

	if (rc || !map)
		return rc;
	old = policy_jdec_key(&d->j, key);
	json_object_foreach((json_t *)map, name, v)
	{
		quota_qty_t q;

		old2 = policy_jdec_mapkey(&d->j, name);
		if (!policy_name_is_resource(name))
			rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "invalid resource name");
		else
			rc = policy_dec_qty_value(d, v, &q);
		if (rc == GPUQ_OK && quota_reslist_set(list, name, &q))
			rc = policy_jdec_fail(&d->j, GPUQ_ELIMIT, "more than %d resources",
					      QUOTA_RESLIST_MAX);
		policy_jdec_pop(&d->j, old2);
		if (rc)
			break;
	}
	policy_jdec_pop(&d->j, old);
	return rc;
}

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const policy_label_t *)a)->key, ((const policy_label_t *)b)->key);
}

int policy_dec_labels(policy_dec_t *d, const json_t *obj, const char *key, size_t max,
		      policy_labels_t *out)
{
	const json_t *map = NULL, *v;
	const char *name;
	policy_label_t *items;
	size_t old, old2, n = 0;
	int rc = policy_jdec_obj(&d->j, obj, key, false, &map);

	out->items = NULL;
	out->n = 0;
	if (rc || !map)
		return rc;
	old = policy_jdec_key(&d->j, key);
	if (json_object_size(map) > max) {
		rc = policy_jdec_fail(&d->j, GPUQ_ELIMIT, "%zu labels, more than the %zu allowed",
				      json_object_size(map), max);
		policy_jdec_pop(&d->j, old);
		return rc;
	}
	items = policy_arena_alloc(&d->p->arena, (json_object_size(map) + 1) * sizeof(*items));
	if (!items)
		return policy_oom(d->j.diag);
	json_object_foreach((json_t *)map, name, v)
	{
		old2 = policy_jdec_mapkey(&d->j, name);
		if (!policy_name_is_label_key(name))
			rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "invalid label key");
		else
			rc = str_value(d, v, POLICY_STRING_MAX, &items[n].value);
		if (rc == GPUQ_OK && !policy_name_is_label_value(items[n].value))
			rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "invalid label value \"%s\"",
					      items[n].value);
		if (rc == GPUQ_OK && !(items[n].key = policy_arena_strdup(&d->p->arena, name)))
			rc = policy_oom(d->j.diag);
		policy_jdec_pop(&d->j, old2);
		if (rc)
			break;
		n++;
	}
	policy_jdec_pop(&d->j, old);
	if (rc)
		return rc;
	qsort(items, n, sizeof(*items), label_cmp);
	out->items = items;
	out->n = n;
	return GPUQ_OK;
}

/* ---- Label selectors ---- */

static const char *const SEL_OPS[] = {"In", "NotIn", "Exists", "DoesNotExist", NULL};

static int sel_values(policy_dec_t *d, const json_t *expr, policy_sel_req_t *req)
{
	const json_t *vals = NULL;
	const char **out;
	size_t old;
	int rc = policy_jdec_arr(&d->j, expr, "values", false, POLICY_SELECTOR_VALUES_MAX, &vals);
	bool want = req->op == POLICY_SEL_IN || req->op == POLICY_SEL_NOT_IN;

	if (rc)
		return rc;
	if (want != (vals && json_array_size(vals) > 0)) {
		old = policy_jdec_key(&d->j, "values");
		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "%s for operator %s",
				      want ? "must not be empty" : "must be empty",
				      SEL_OPS[req->op]);
		policy_jdec_pop(&d->j, old);
		return rc;
	}
	if (!want)
		return GPUQ_OK;
	out = policy_arena_alloc(&d->p->arena, json_array_size(vals) * sizeof(*out));
	if (!out)
		return policy_oom(d->j.diag);
	old = policy_jdec_key(&d->j, "values");
	for (size_t i = 0; i < json_array_size(vals) && rc == GPUQ_OK; i++) {
		size_t old2 = policy_jdec_idx(&d->j, i);

		rc = str_value(d, json_array_get(vals, i), POLICY_STRING_MAX, &out[i]);
		if (rc == GPUQ_OK && !policy_name_is_label_value(out[i]))
			rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "invalid label value \"%s\"",
					      out[i]);
		policy_jdec_pop(&d->j, old2);
	}
	policy_jdec_pop(&d->j, old);
	req->values = out;
	req->n_values = json_array_size(vals);
	return rc;
}

static int sel_expr(policy_dec_t *d, const json_t *expr, policy_sel_req_t *req)
{
	static const char *const keys[] = {"key", "operator", "values", NULL};
	int op = -1, rc;

	if (!json_is_object(expr))
		return policy_jdec_want(&d->j, expr, "a mapping");
	rc = policy_jdec_keys(&d->j, expr, keys, NULL);
	if (rc == GPUQ_OK)
		rc = policy_dec_str(d, expr, "key", true, POLICY_STRING_MAX, &req->key);
	if (rc == GPUQ_OK && !policy_name_is_label_key(req->key)) {
		size_t old = policy_jdec_key(&d->j, "key");

		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "invalid label key \"%s\"", req->key);
		policy_jdec_pop(&d->j, old);
	}
	if (rc == GPUQ_OK && !json_object_get(expr, "operator")) {
		size_t old = policy_jdec_key(&d->j, "operator");

		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "required");
		policy_jdec_pop(&d->j, old);
	}
	if (rc == GPUQ_OK)
		rc = policy_jdec_enum(&d->j, expr, "operator", SEL_OPS, &op);
	if (rc == GPUQ_OK) {
		req->op = (policy_sel_op_t)op;
		rc = sel_values(d, expr, req);
	}
	return rc;
}

int policy_dec_selector(policy_dec_t *d, const json_t *obj, const char *key, policy_selector_t *out)
{
	static const char *const keys[] = {"matchLabels", "matchExpressions", NULL};
	const json_t *sel = NULL, *exprs = NULL;
	policy_labels_t ml = {0};
	policy_sel_req_t *reqs;
	size_t old, n;
	int rc = policy_jdec_obj(&d->j, obj, key, false, &sel);

	memset(out, 0, sizeof(*out));
	if (rc || !sel)
		return rc;
	old = policy_jdec_key(&d->j, key);
	rc = policy_jdec_keys(&d->j, sel, keys, NULL);
	if (rc == GPUQ_OK)
		rc = policy_dec_labels(d, sel, "matchLabels", POLICY_SELECTOR_REQS_MAX, &ml);
	if (rc == GPUQ_OK)
		rc = policy_jdec_arr(&d->j, sel, "matchExpressions", false,
				     POLICY_SELECTOR_REQS_MAX, &exprs);
	n = ml.n + (exprs ? json_array_size(exprs) : 0);
	if (rc == GPUQ_OK && n > POLICY_SELECTOR_REQS_MAX)
		rc = policy_jdec_fail(&d->j, GPUQ_ELIMIT,
				      "%zu requirements, more than the %d allowed", n,
				      POLICY_SELECTOR_REQS_MAX);
	reqs = rc ? NULL : policy_arena_alloc(&d->p->arena, (n ? n : 1) * sizeof(*reqs));
	if (rc == GPUQ_OK && !reqs)
		rc = policy_oom(d->j.diag);
	for (size_t i = 0; rc == GPUQ_OK && i < ml.n; i++) {
		reqs[i].key = ml.items[i].key;
		reqs[i].op = POLICY_SEL_IN;
		reqs[i].values = &ml.items[i].value;
		reqs[i].n_values = 1;
	}
	for (size_t i = 0; rc == GPUQ_OK && exprs && i < json_array_size(exprs); i++) {
		size_t o1 = policy_jdec_key(&d->j, "matchExpressions"),
		       o2 = policy_jdec_idx(&d->j, i);

		rc = sel_expr(d, json_array_get(exprs, i), &reqs[ml.n + i]);
		policy_jdec_pop(&d->j, o2);
		policy_jdec_pop(&d->j, o1);
	}
	policy_jdec_pop(&d->j, old);
	if (rc)
		return rc;
	out->present = true;
	out->reqs = reqs;
	out->n_reqs = n;
	return GPUQ_OK;
}

/* ---- Name rules ---- */

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
	return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* s[0..n) is a DNS-1123 label. */
static bool label_n(const char *s, size_t n)
{
	if (n == 0 || n > 63 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

static bool subdomain_n(const char *s, size_t n)
{
	size_t start = 0;

	if (n == 0 || n > 253)
		return false;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || s[i] == '.') {
			if (!label_n(s + start, i - start))
				return false;
			start = i + 1;
		}
	}
	return true;
}

bool policy_name_is_label(const char *s)
{
	return s && label_n(s, strlen(s));
}

bool policy_name_is_subdomain(const char *s)
{
	return s && subdomain_n(s, strlen(s));
}

/* The name part of a qualified name: [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, <= 63. */
static bool qualified_part(const char *s, size_t n)
{
	if (n == 0 || n > 63 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(s[i]) && !strchr("-_.", s[i]))
			return false;
	return true;
}

bool policy_name_is_label_key(const char *s)
{
	const char *slash = strchr(s, '/');

	if (!slash)
		return qualified_part(s, strlen(s));
	return subdomain_n(s, (size_t)(slash - s)) && qualified_part(slash + 1, strlen(slash + 1));
}

bool policy_name_is_label_value(const char *s)
{
	return *s == '\0' || qualified_part(s, strlen(s));
}

bool policy_name_is_resource(const char *s)
{
	return strlen(s) < QUOTA_RES_NAME_MAX && policy_name_is_label_key(s);
}

/* ---- Metadata, registration ---- */

policy_origin_t policy_dec_origin(const policy_dec_t *d)
{
	return d->p->origin;
}

static int name_rule(policy_dec_t *d, const char *key, const char *v, bool label)
{
	size_t old;
	int rc;

	if (label ? policy_name_is_label(v) : policy_name_is_subdomain(v))
		return GPUQ_OK;
	old = policy_jdec_key(&d->j, key);
	rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "invalid name \"%s\" (want a DNS-1123 %s)", v,
			      label ? "label" : "subdomain");
	policy_jdec_pop(&d->j, old);
	return rc;
}

int policy_dec_meta(policy_dec_t *d, const json_t *obj, const char *kind, bool namespaced,
		    bool name_is_label, const char **ns, const char **name)
{
	const json_t *meta = NULL, *nsv;
	const char *n = "", *s = "";
	size_t old;
	int rc;

	snprintf(d->j.what, sizeof(d->j.what), "%s", kind);
	rc = policy_jdec_obj(&d->j, obj, "metadata", true, &meta);
	if (rc)
		return rc;
	old = policy_jdec_key(&d->j, "metadata");
	rc = policy_dec_str(d, meta, "name", true, 253, &n);
	if (rc == GPUQ_OK)
		rc = name_rule(d, "name", n, name_is_label);
	nsv = json_object_get(meta, "namespace");
	if (rc == GPUQ_OK && namespaced) {
		rc = policy_dec_str(d, meta, "namespace", true, 63, &s);
		if (rc == GPUQ_OK)
			rc = name_rule(d, "namespace", s, true);
	} else if (rc == GPUQ_OK && nsv && !json_is_null(nsv)) {
		size_t o2 = policy_jdec_key(&d->j, "namespace");

		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "must not be set: %s is cluster-scoped",
				      kind);
		policy_jdec_pop(&d->j, o2);
	}
	policy_jdec_pop(&d->j, old);
	if (rc)
		return rc;
	if (namespaced)
		snprintf(d->j.what, sizeof(d->j.what), "%s \"%s/%s\"", kind, s, n);
	else
		snprintf(d->j.what, sizeof(d->j.what), "%s \"%s\"", kind, n);
	*name = n;
	if (ns)
		*ns = s;
	return GPUQ_OK;
}

int policy_dec_price(policy_dec_t *d, const json_t *obj, bool *has, double *price)
{
	const json_t *meta = json_object_get(obj, "metadata"), *ann, *v;
	gpuq_diag_t why = {{0}};
	size_t old;
	int rc;

	*has = false;
	ann = json_is_object(meta) ? json_object_get(meta, "annotations") : NULL;
	v = json_is_object(ann) ? json_object_get(ann, POLICY_ANNOT_PRICE) : NULL;
	if (!v || json_is_null(v))
		return GPUQ_OK;
	old = policy_jdec_key(&d->j, "metadata.annotations[\"" POLICY_ANNOT_PRICE "\"]");
	if (!json_is_string(v))
		rc = policy_jdec_want(&d->j, v, "a string such as \"2.50\"");
	else if (ledger_price_parse(json_string_value(v), price, &why))
		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "%s", why.msg);
	else
		rc = GPUQ_OK;
	policy_jdec_pop(&d->j, old);
	*has = rc == GPUQ_OK;
	return rc;
}

int policy_dec_price_lenient(policy_dec_t *d, const json_t *obj, bool *has, double *price,
			     const char **error)
{
	gpuq_diag_t *outer = d->j.diag, why = {{0}};
	int rc;

	*error = NULL;
	if (!d->p->opts.price_lenient)
		return policy_dec_price(d, obj, has, price);
	d->j.diag = &why;
	rc = policy_dec_price(d, obj, has, price);
	d->j.diag = outer;
	if (rc == GPUQ_EINVAL) { /* kept, unpriced: the caller says why */
		*error = policy_arena_strdup(&d->p->arena, why.msg);
		if (!*error)
			return gpuq_diag_set(outer, GPUQ_ENOMEM, "out of memory");
		rc = GPUQ_OK;
	}
	return rc;
}

static policy_vec_t *kind_vec(policy_t *p, int kind, size_t *cap, const char **plural)
{
	switch (kind) {
	case POLICY_K_LIMITRANGE:
		*cap = POLICY_LIMITRANGES_MAX, *plural = "LimitRanges";
		return &p->lrs;
	case POLICY_K_QUOTA:
		*cap = POLICY_QUOTAS_MAX, *plural = "ResourceQuotas";
		return &p->rqs;
	case POLICY_K_PRIORITYCLASS:
		*cap = POLICY_PRIORITYCLASSES_MAX, *plural = "PriorityClasses";
		return &p->pcs;
	case POLICY_K_FLAVOR:
		*cap = POLICY_FLAVORS_MAX, *plural = "ResourceFlavors";
		return &p->flavors;
	case POLICY_K_CQ:
		*cap = POLICY_CQ_MAX, *plural = "ClusterQueues";
		return &p->cqs;
	case POLICY_K_LQ:
		*cap = POLICY_LQ_MAX, *plural = "LocalQueues";
		return &p->lqs;
	case POLICY_K_COHORT:
		*cap = POLICY_COHORTS_MAX, *plural = "Cohorts";
		return &p->cohorts;
	case POLICY_K_CLAIMTEMPLATE:
		*cap = POLICY_CLAIMTEMPLATES_MAX, *plural = "ResourceClaimTemplates";
		return &p->rcts;
	case POLICY_K_RUNTIMECLASS:
		*cap = POLICY_RUNTIMECLASSES_MAX, *plural = "RuntimeClasses";
		return &p->rtcs;
	case POLICY_K_TOPOLOGY:
		*cap = POLICY_TOPOLOGIES_MAX, *plural = "Topologies";
		return &p->topologies;
	default:
		*cap = POLICY_NAMESPACES_MAX, *plural = "Namespaces";
		return &p->namespaces;
	}
}

/* Where an object already in the index was declared. */
static policy_origin_t origin_of(int kind, const void *obj)
{
	switch (kind) {
	case POLICY_K_LIMITRANGE:
		return ((const policy_lr_entry_t *)obj)->origin;
	case POLICY_K_QUOTA:
		return ((const policy_rq_entry_t *)obj)->origin;
	case POLICY_K_PRIORITYCLASS:
		return ((const policy_priorityclass_t *)obj)->origin;
	case POLICY_K_FLAVOR:
		return ((const policy_flavor_t *)obj)->origin;
	case POLICY_K_CQ:
		return ((const policy_cq_t *)obj)->origin;
	case POLICY_K_LQ:
		return ((const policy_lq_t *)obj)->origin;
	case POLICY_K_COHORT:
		return ((const policy_cohort_t *)obj)->origin;
	case POLICY_K_CLAIMTEMPLATE:
		return ((const policy_claimtemplate_t *)obj)->origin;
	case POLICY_K_RUNTIMECLASS:
		return ((const policy_runtimeclass_t *)obj)->origin;
	case POLICY_K_TOPOLOGY:
		return ((const policy_topology_t *)obj)->origin;
	default:
		return ((const policy_ns_entry_t *)obj)->pub.origin;
	}
}

int policy_dec_register(policy_dec_t *d, int kind, const char *ns, const char *name, void *obj)
{
	policy_t *p = d->p;
	const char *plural;
	size_t cap;
	policy_vec_t *v = kind_vec(p, kind, &cap, &plural);
	void *first = policy_index_get(&p->index, kind, ns, name);

	if (first) {
		policy_origin_t o = origin_of(kind, first);

		if (o.file)
			return policy_jdec_fail(
			    &d->j, GPUQ_EEXIST,
			    "duplicate name (first declared in %s document %zu)", o.file, o.doc);
		return policy_jdec_fail(&d->j, GPUQ_EEXIST, "duplicate name");
	}
	if (v->n >= cap)
		return policy_jdec_fail(&d->j, GPUQ_ELIMIT, "more than %zu %s", cap, plural);
	if (p->n_objects >= POLICY_OBJECTS_MAX)
		return policy_jdec_fail(&d->j, GPUQ_ELIMIT, "more than %d objects",
					POLICY_OBJECTS_MAX);
	if (v->n == v->cap && policy_vec_push(v, NULL) == GPUQ_OK)
		v->n--; /* reserve room so the push below cannot fail */
	if (v->n == v->cap || policy_index_put(&p->index, kind, ns, name, obj))
		return policy_oom(d->j.diag);
	v->items[v->n++] = obj;
	p->n_objects++;
	return GPUQ_OK;
}

/* ---- Namespace ---- */

static int decode_namespace(policy_dec_t *d, const json_t *obj)
{
	const json_t *meta = json_object_get(obj, "metadata");
	policy_labels_t labels;
	policy_label_t *all;
	policy_ns_entry_t *e;
	const char *name, *own;
	size_t old;
	int rc = policy_dec_meta(d, obj, "Namespace", false, true, NULL, &name);

	if (rc)
		return rc;
	old = policy_jdec_key(&d->j, "metadata");
	rc = policy_dec_labels(d, meta, "labels", POLICY_LABELS_MAX, &labels);
	policy_jdec_pop(&d->j, old);
	if (rc)
		return rc;
	own = policy_labels_get(&labels, "kubernetes.io/metadata.name");
	if (own && strcmp(own, name) != 0)
		return policy_jdec_fail(
		    &d->j, GPUQ_EINVAL,
		    "metadata.labels[kubernetes.io/metadata.name]: \"%s\" is not "
		    "the namespace's name",
		    own);
	all = policy_arena_alloc(&d->p->arena, (labels.n + 1) * sizeof(*all));
	if (!all)
		return policy_oom(d->j.diag);
	if (labels.n)
		memcpy(all, labels.items, labels.n * sizeof(*all));
	if (!own) {
		all[labels.n].key = "kubernetes.io/metadata.name";
		all[labels.n].value = name;
		labels.n++;
		qsort(all, labels.n, sizeof(*all), label_cmp);
	}
	e = policy_index_get(&d->p->index, POLICY_K_NAMESPACE, "", name);
	if (e && e->pub.declared)
		return policy_dec_register(d, POLICY_K_NAMESPACE, "", name, NULL);
	if (!e && d->p->n_objects >= POLICY_OBJECTS_MAX)
		return policy_jdec_fail(&d->j, GPUQ_ELIMIT, "more than %d objects",
					POLICY_OBJECTS_MAX);
	rc = policy_ns_ensure(d->p, name, &e);
	if (rc == GPUQ_ELIMIT)
		return policy_jdec_fail(&d->j, rc, "more than %d Namespaces",
					POLICY_NAMESPACES_MAX);
	if (rc)
		return gpuq_diag_set(d->j.diag, rc, "out of memory");
	e->pub.declared = true;
	e->pub.labels.items = all;
	e->pub.labels.n = labels.n;
	e->pub.origin = policy_dec_origin(d);
	d->p->n_objects++;
	return GPUQ_OK;
}

/* A namespaced object's namespace exists (implied if need be). */
static int need_namespace(policy_dec_t *d, const char *ns)
{
	policy_ns_entry_t *e;
	int rc = policy_ns_ensure(d->p, ns, &e);

	if (rc == GPUQ_ELIMIT)
		return policy_jdec_fail(&d->j, rc, "more than %d Namespaces",
					POLICY_NAMESPACES_MAX);
	if (rc)
		return gpuq_diag_set(d->j.diag, rc, "out of memory");
	return GPUQ_OK;
}

/* ---- LimitRange ---- */

static int lr_item(policy_dec_t *d, const json_t *it, quota_lr_item_t *out)
{
	static const char *const keys[] = {
	    "type", "min", "max", "default", "defaultRequest", "maxLimitRequestRatio", NULL};
	static const char *const types[] = {"Container", "Pod", "PersistentVolumeClaim", NULL};
	int type = -1;
	int rc;

	if (!json_is_object(it))
		return policy_jdec_want(&d->j, it, "a mapping");
	rc = policy_jdec_keys(&d->j, it, keys, NULL);
	if (rc == GPUQ_OK && !json_is_string(json_object_get(it, "type"))) {
		size_t old = policy_jdec_key(&d->j, "type");

		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "required");
		policy_jdec_pop(&d->j, old);
	}
	if (rc == GPUQ_OK)
		rc = policy_jdec_enum(&d->j, it, "type", types, &type);
	out->type = (quota_lr_type_t)type;
	if (rc == GPUQ_OK)
		rc = policy_dec_reslist(d, it, "min", &out->min);
	if (rc == GPUQ_OK)
		rc = policy_dec_reslist(d, it, "max", &out->max);
	if (rc == GPUQ_OK)
		rc = policy_dec_reslist(d, it, "default", &out->def);
	if (rc == GPUQ_OK)
		rc = policy_dec_reslist(d, it, "defaultRequest", &out->def_request);
	if (rc == GPUQ_OK)
		rc = policy_dec_reslist(d, it, "maxLimitRequestRatio", &out->max_ratio);
	if (rc == GPUQ_OK && out->type == QUOTA_LR_POD && (out->def.n || out->def_request.n))
		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL,
				      "default and defaultRequest are not allowed for type Pod");
	return rc;
}

/* min <= defaultRequest <= default <= max, per resource, as the apiserver checks. */
static int lr_item_order(policy_dec_t *d, const quota_lr_item_t *it)
{
	const quota_reslist_t *order[] = {&it->min, &it->def_request, &it->def, &it->max};
	static const char *const names[] = {"min", "defaultRequest", "default", "max"};

	for (size_t a = 0; a < 4; a++)
		for (size_t b = a + 1; b < 4; b++)
			for (size_t r = 0; r < order[a]->n; r++) {
				const quota_res_t *lo = &order[a]->items[r];
				const quota_qty_t *hi = quota_reslist_get(order[b], lo->name);
				char x[QUOTA_QTY_FMT_MAX], y[QUOTA_QTY_FMT_MAX];

				if (!hi || quota_qty_cmp(&lo->qty, hi) <= 0)
					continue;
				quota_qty_format(&lo->qty, x, sizeof(x));
				quota_qty_format(hi, y, sizeof(y));
				return policy_jdec_fail(
				    &d->j, GPUQ_EINVAL, "%s[%s] %s is more than %s[%s] %s",
				    names[a], lo->name, x, names[b], lo->name, y);
			}
	return GPUQ_OK;
}

static int decode_limitrange(policy_dec_t *d, const json_t *obj)
{
	const json_t *spec = NULL, *limits = NULL;
	policy_lr_entry_t *e;
	const char *ns, *name;
	size_t old;
	int rc = policy_dec_meta(d, obj, "LimitRange", true, false, &ns, &name);

	if (rc == GPUQ_OK)
		rc = policy_jdec_obj(&d->j, obj, "spec", true, &spec);
	if (rc == GPUQ_OK)
		rc = policy_jdec_arr(&d->j, spec, "limits", false, POLICY_LR_ITEMS_MAX, &limits);
	if (rc)
		return rc;
	e = policy_arena_alloc(&d->p->arena, sizeof(*e));
	if (!e)
		return policy_oom(d->j.diag);
	e->pub.n_items = limits ? json_array_size(limits) : 0;
	e->pub.items =
	    policy_arena_alloc(&d->p->arena, (e->pub.n_items + 1) * sizeof(*e->pub.items));
	if (!e->pub.items)
		return policy_oom(d->j.diag);
	snprintf(e->pub.namespace_, sizeof(e->pub.namespace_), "%s", ns);
	snprintf(e->pub.name, sizeof(e->pub.name), "%s", name);
	e->origin = policy_dec_origin(d);
	old = policy_jdec_key(&d->j, "spec");
	for (size_t i = 0; i < e->pub.n_items && rc == GPUQ_OK; i++) {
		size_t o1 = policy_jdec_key(&d->j, "limits"), o2 = policy_jdec_idx(&d->j, i);

		rc = lr_item(d, json_array_get(limits, i), &e->pub.items[i]);
		if (rc == GPUQ_OK)
			rc = lr_item_order(d, &e->pub.items[i]);
		policy_jdec_pop(&d->j, o2);
		policy_jdec_pop(&d->j, o1);
	}
	policy_jdec_pop(&d->j, old);
	if (rc == GPUQ_OK)
		rc = need_namespace(d, ns);
	if (rc == GPUQ_OK)
		rc = policy_dec_register(d, POLICY_K_LIMITRANGE, e->pub.namespace_, e->pub.name, e);
	return rc;
}

/* ---- ResourceQuota ---- */

/* Scope entries a ResourceQuota may have (scopes[] plus matchExpressions[]):
 * the apiserver's own list is shorter. */
#define RQ_SCOPES_MAX 16
/* Values of one PriorityClass expression (class names). */
#define RQ_SCOPE_VALUES_MAX 64

/* A scope's name: the pod scopes, any other (VolumeAttributesClass, one
 * gpuq does not know) a scope of no pod. */
static quota_scope_name_t scope_named(const char *name)
{
	static const char *const names[] = {"Terminating",   "NotTerminating",
					    "BestEffort",    "NotBestEffort",
					    "PriorityClass", "CrossNamespacePodAffinity"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return (quota_scope_name_t)i;
	return QUOTA_SCOPE_OTHER;
}

/* One matchExpressions entry into *out. */
static int rq_expression(policy_dec_t *d, const json_t *e, quota_scope_t *out)
{
	static const char *const keys[] = {"scopeName", "operator", "values", NULL};
	static const char *const ops[] = {"Exists", "DoesNotExist", "In", "NotIn", NULL};
	const json_t *vals = NULL;
	const char *name = NULL, **v;
	int op = 0;
	int rc = policy_jdec_keys(&d->j, e, keys, NULL);

	if (!rc)
		rc = policy_jdec_str(&d->j, e, "scopeName", true, 64, &name);
	if (!rc)
		rc = policy_jdec_enum(&d->j, e, "operator", ops, &op);
	if (!rc)
		rc = policy_jdec_arr(&d->j, e, "values", false, RQ_SCOPE_VALUES_MAX, &vals);
	if (rc)
		return rc;
	out->scope = scope_named(name);
	out->op = (quota_scope_op_t)op;
	out->n_values = json_array_size(vals);
	v = out->n_values ? policy_arena_alloc(&d->p->arena, out->n_values * sizeof(*v)) : NULL;
	if (out->n_values && !v)
		return policy_oom(d->j.diag);
	for (size_t i = 0; !rc && i < out->n_values; i++) {
		size_t old = policy_jdec_key(&d->j, "values");
		policy_jdec_idx(&d->j, i);
		rc = policy_jdec_str_value(&d->j, json_array_get(vals, i), QUOTA_OBJ_NAME_MAX - 1,
					   &v[i]);
		if (!rc && !(v[i] = policy_arena_strdup(&d->p->arena, v[i])))
			rc = policy_oom(d->j.diag);
		policy_jdec_pop(&d->j, old);
	}
	out->values = v;
	return rc;
}

/* A quota's scopes: spec.scopes[] (each as Exists) and
 * spec.scopeSelector.matchExpressions[], into rq (the arena's memory). A pod
 * is counted by the quota only when it matches them all
 * (quota_resourcequota_applies). */
static int rq_scopes(policy_dec_t *d, const json_t *spec, quota_resourcequota_t *rq)
{
	static const char *const sel_keys[] = {"matchExpressions", NULL};
	const json_t *scopes = NULL, *sel = NULL, *exprs = NULL;
	quota_scope_t *out;
	size_t n, old = policy_jdec_key(&d->j, "spec");
	int rc = policy_jdec_arr(&d->j, spec, "scopes", false, RQ_SCOPES_MAX, &scopes);

	if (!rc)
		rc = policy_jdec_obj(&d->j, spec, "scopeSelector", false, &sel);
	if (!rc && sel) {
		size_t o2 = policy_jdec_key(&d->j, "scopeSelector");
		rc = policy_jdec_keys(&d->j, sel, sel_keys, NULL);
		if (!rc)
			rc = policy_jdec_arr(&d->j, sel, "matchExpressions", false, RQ_SCOPES_MAX,
					     &exprs);
		policy_jdec_pop(&d->j, o2);
	}
	n = json_array_size(scopes) + json_array_size(exprs);
	if (rc || !n) {
		policy_jdec_pop(&d->j, old);
		return rc;
	}
	if (n > RQ_SCOPES_MAX)
		rc = policy_jdec_fail(&d->j, GPUQ_ELIMIT, "more than %d scopes", RQ_SCOPES_MAX);
	out = rc ? NULL : policy_arena_alloc(&d->p->arena, n * sizeof(*out));
	if (!rc && !out)
		rc = policy_oom(d->j.diag);
	for (size_t i = 0; !rc && i < json_array_size(scopes); i++) {
		const char *name;
		size_t o2 = policy_jdec_key(&d->j, "scopes");
		policy_jdec_idx(&d->j, i);
		rc = policy_jdec_str_value(&d->j, json_array_get(scopes, i), 64, &name);
		if (!rc)
			out[rq->n_scopes++] =
			    (quota_scope_t){scope_named(name), QUOTA_SCOPE_EXISTS, NULL, 0};
		policy_jdec_pop(&d->j, o2);
	}
	for (size_t i = 0; !rc && i < json_array_size(exprs); i++) {
		size_t o2 = policy_jdec_key(&d->j, "scopeSelector");
		policy_jdec_key(&d->j, "matchExpressions");
		policy_jdec_idx(&d->j, i);
		rc = rq_expression(d, json_array_get(exprs, i), &out[rq->n_scopes]);
		if (!rc)
			rq->n_scopes++;
		policy_jdec_pop(&d->j, o2);
	}
	rq->scopes = out;
	policy_jdec_pop(&d->j, old);
	return rc;
}

static int decode_quota(policy_dec_t *d, const json_t *obj)
{
	static const char *const keys[] = {"hard", "scopes", "scopeSelector", NULL};
	const json_t *spec = NULL, *status = NULL;
	policy_rq_entry_t *e;
	const char *ns, *name;
	size_t old;
	int rc = policy_dec_meta(d, obj, "ResourceQuota", true, false, &ns, &name);

	if (rc == GPUQ_OK)
		rc = policy_jdec_obj(&d->j, obj, "spec", true, &spec);
	if (rc == GPUQ_OK)
		rc = policy_jdec_obj(&d->j, obj, "status", false, &status);
	if (rc == GPUQ_OK) {
		old = policy_jdec_key(&d->j, "spec");
		rc = policy_jdec_keys(&d->j, spec, keys, NULL);
		policy_jdec_pop(&d->j, old);
	}
	if (rc)
		return rc;
	e = policy_arena_alloc(&d->p->arena, sizeof(*e));
	if (!e)
		return policy_oom(d->j.diag);
	memset(e, 0, sizeof(*e));
	snprintf(e->pub.namespace_, sizeof(e->pub.namespace_), "%s", ns);
	snprintf(e->pub.name, sizeof(e->pub.name), "%s", name);
	e->origin = policy_dec_origin(d);
	old = policy_jdec_key(&d->j, "spec");
	rc = policy_dec_reslist(d, spec, "hard", &e->pub.hard);
	policy_jdec_pop(&d->j, old);
	if (rc == GPUQ_OK)
		rc = rq_scopes(d, spec, &e->pub);
	if (rc == GPUQ_OK && status) {
		old = policy_jdec_key(&d->j, "status");
		rc = policy_dec_reslist(d, status, "used", &e->pub.used);
		policy_jdec_pop(&d->j, old);
	}
	if (rc == GPUQ_OK)
		rc = need_namespace(d, ns);
	if (rc == GPUQ_OK)
		rc = policy_dec_register(d, POLICY_K_QUOTA, e->pub.namespace_, e->pub.name, e);
	return rc;
}

/* ---- PriorityClass ---- */

/* The highest value a PriorityClass outside "system-" may have. */
#define USER_PRIORITY_MAX 1000000000

static int decode_priorityclass(policy_dec_t *d, const json_t *obj)
{
	static const char *const modes[] = {"PreemptLowerPriority", "Never", NULL};
	policy_priorityclass_t *pc;
	const char *name;
	int64_t value = 0, min_rt = 0;
	int mode = 0;
	bool def = false;
	int rc = policy_dec_meta(d, obj, "PriorityClass", false, false, NULL, &name);

	if (rc == GPUQ_OK)
		rc = policy_jdec_int(&d->j, obj, "value", true, INT32_MIN, INT32_MAX, &value);
	if (rc == GPUQ_OK && value > USER_PRIORITY_MAX && strncmp(name, "system-", 7) != 0)
		rc =
		    policy_jdec_fail(&d->j, GPUQ_ERANGE,
				     "value: %" PRId64 " is above %d, reserved for system- classes",
				     value, USER_PRIORITY_MAX);
	if (rc == GPUQ_OK)
		rc = policy_jdec_bool(&d->j, obj, "globalDefault", &def);
	if (rc == GPUQ_OK)
		rc = policy_jdec_enum(&d->j, obj, "preemptionPolicy", modes, &mode);
	if (rc == GPUQ_OK)
		rc = policy_dec_pc_min_runtime(d, obj, &min_rt);
	if (rc)
		return rc;
	pc = policy_arena_alloc(&d->p->arena, sizeof(*pc));
	if (!pc || !(pc->name = policy_arena_strdup(&d->p->arena, name)))
		return policy_oom(d->j.diag);
	pc->value = (int32_t)value;
	pc->global_default = def;
	pc->preempt_never = mode == 1;
	pc->min_runtime_ms = min_rt;
	pc->origin = policy_dec_origin(d);
	return policy_dec_register(d, POLICY_K_PRIORITYCLASS, "", pc->name, pc);
}

/* ---- ResourceClaimTemplate ---- */

static const char *const ALLOC_MODES[] = {"ExactCount", "All", NULL};

/* deviceClassName / allocationMode / count of one choice (in obj). */
static int device_choice(policy_dec_t *d, const json_t *obj, policy_device_choice_t *c)
{
	int mode = 0;
	int64_t count = 1;
	int rc = policy_dec_str(d, obj, "deviceClassName", true, 253, &c->device_class);

	if (rc == GPUQ_OK && !policy_name_is_subdomain(c->device_class)) {
		size_t old = policy_jdec_key(&d->j, "deviceClassName");

		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "invalid device class name \"%s\"",
				      c->device_class);
		policy_jdec_pop(&d->j, old);
	}
	if (rc == GPUQ_OK)
		rc = policy_jdec_enum(&d->j, obj, "allocationMode", ALLOC_MODES, &mode);
	if (rc == GPUQ_OK && mode == POLICY_ALLOC_ALL && json_object_get(obj, "count")) {
		size_t old = policy_jdec_key(&d->j, "count");

		rc =
		    policy_jdec_fail(&d->j, GPUQ_EINVAL, "must not be set with allocationMode All");
		policy_jdec_pop(&d->j, old);
	}
	if (rc == GPUQ_OK && mode != POLICY_ALLOC_ALL)
		rc = policy_jdec_int(&d->j, obj, "count", false, 1, INT32_MAX, &count);
	c->mode = (policy_alloc_mode_t)mode;
	c->count = mode == POLICY_ALLOC_ALL ? 0 : count;
	return rc;
}

static int dns_label_field(policy_dec_t *d, const json_t *obj, const char *key, const char **out)
{
	int rc = policy_dec_str(d, obj, key, true, 63, out);

	if (rc == GPUQ_OK && !policy_name_is_label(*out)) {
		size_t old = policy_jdec_key(&d->j, key);

		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL,
				      "invalid name \"%s\" (want a DNS-1123 label)", *out);
		policy_jdec_pop(&d->j, old);
	}
	return rc;
}

static int first_available(policy_dec_t *d, const json_t *list, policy_device_request_t *r)
{
	policy_device_choice_t *c;
	size_t n = json_array_size(list);
	int rc = GPUQ_OK;

	if (n == 0)
		return policy_jdec_fail(&d->j, GPUQ_EINVAL, "firstAvailable: must not be empty");
	c = policy_arena_alloc(&d->p->arena, n * sizeof(*c));
	if (!c)
		return policy_oom(d->j.diag);
	for (size_t i = 0; i < n && rc == GPUQ_OK; i++) {
		const json_t *sub = json_array_get(list, i);
		size_t o1 = policy_jdec_key(&d->j, "firstAvailable"),
		       o2 = policy_jdec_idx(&d->j, i);

		if (!json_is_object(sub))
			rc = policy_jdec_want(&d->j, sub, "a mapping");
		if (rc == GPUQ_OK)
			rc = dns_label_field(d, sub, "name", &c[i].name);
		for (size_t j = 0; rc == GPUQ_OK && j < i; j++)
			if (!strcmp(c[j].name, c[i].name))
				rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "name: duplicate \"%s\"",
						      c[i].name);
		if (rc == GPUQ_OK)
			rc = device_choice(d, sub, &c[i]);
		policy_jdec_pop(&d->j, o2);
		policy_jdec_pop(&d->j, o1);
	}
	r->first_available = true;
	r->choices = c;
	r->n_choices = n;
	return rc;
}

/* One spec.spec.devices.requests[] entry. v1beta1 is flat (deviceClassName
 * on the request); v1 and v1beta2 nest it under `exactly`. Other fields
 * (selectors, adminAccess, tolerations, capacity) are not gpuq's concern. */
static int device_request(policy_dec_t *d, const json_t *req, bool flat, policy_device_request_t *r)
{
	const json_t *fa = NULL, *exactly = NULL;
	policy_device_choice_t *c;
	int rc;

	if (!json_is_object(req))
		return policy_jdec_want(&d->j, req, "a mapping");
	rc = dns_label_field(d, req, "name", &r->name);
	if (rc == GPUQ_OK)
		rc = policy_jdec_arr(&d->j, req, "firstAvailable", false, POLICY_SUBREQUESTS_MAX,
				     &fa);
	if (rc == GPUQ_OK && !flat)
		rc = policy_jdec_obj(&d->j, req, "exactly", false, &exactly);
	if (rc)
		return rc;
	if (fa && (exactly || (flat && json_object_get(req, "deviceClassName"))))
		return policy_jdec_fail(&d->j, GPUQ_EINVAL,
					"set exactly one of %s and firstAvailable",
					flat ? "deviceClassName" : "exactly");
	if (fa)
		return first_available(d, fa, r);
	if (!flat && !exactly)
		return policy_jdec_fail(&d->j, GPUQ_EINVAL,
					"set one of exactly and firstAvailable");
	c = policy_arena_alloc(&d->p->arena, sizeof(*c));
	if (!c)
		return policy_oom(d->j.diag);
	c->name = "";
	r->choices = c;
	r->n_choices = 1;
	if (flat)
		return device_choice(d, req, c);
	{
		size_t old = policy_jdec_key(&d->j, "exactly");

		rc = device_choice(d, exactly, c);
		policy_jdec_pop(&d->j, old);
	}
	return rc;
}

static int decode_claimtemplate(policy_dec_t *d, const json_t *obj)
{
	const json_t *spec = NULL, *inner = NULL, *devices = NULL, *reqs = NULL;
	policy_claimtemplate_t *t;
	const char *ns, *name;
	bool flat = !strcmp(d->api, "resource.k8s.io/v1beta1");
	size_t old;
	int rc = policy_dec_meta(d, obj, "ResourceClaimTemplate", true, false, &ns, &name);

	if (rc == GPUQ_OK)
		rc = policy_jdec_obj(&d->j, obj, "spec", true, &spec);
	old = policy_jdec_key(&d->j, "spec");
	if (rc == GPUQ_OK)
		rc = policy_jdec_obj(&d->j, spec, "spec", true, &inner);
	policy_jdec_key(&d->j, "spec");
	if (rc == GPUQ_OK)
		rc = policy_jdec_obj(&d->j, inner, "devices", false, &devices);
	policy_jdec_key(&d->j, "devices");
	if (rc == GPUQ_OK && devices)
		rc = policy_jdec_arr(&d->j, devices, "requests", false, POLICY_DEVICE_REQUESTS_MAX,
				     &reqs);
	t = rc ? NULL : policy_arena_alloc(&d->p->arena, sizeof(*t));
	if (rc == GPUQ_OK && t) {
		t->n_requests = reqs ? json_array_size(reqs) : 0;
		t->requests =
		    policy_arena_alloc(&d->p->arena, (t->n_requests + 1) * sizeof(*t->requests));
	}
	if (rc == GPUQ_OK && (!t || !t->requests))
		rc = policy_oom(d->j.diag);
	for (size_t i = 0; rc == GPUQ_OK && i < t->n_requests; i++) {
		policy_device_request_t *r = (policy_device_request_t *)&t->requests[i];
		size_t o1 = policy_jdec_key(&d->j, "requests"), o2 = policy_jdec_idx(&d->j, i);

		rc = device_request(d, json_array_get(reqs, i), flat, r);
		for (size_t j = 0; rc == GPUQ_OK && j < i; j++)
			if (!strcmp(t->requests[j].name, r->name))
				rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "name: duplicate \"%s\"",
						      r->name);
		policy_jdec_pop(&d->j, o2);
		policy_jdec_pop(&d->j, o1);
	}
	policy_jdec_pop(&d->j, old);
	if (rc)
		return rc;
	t->namespace_ = policy_arena_strdup(&d->p->arena, ns);
	t->name = policy_arena_strdup(&d->p->arena, name);
	if (!t->namespace_ || !t->name)
		return policy_oom(d->j.diag);
	t->origin = policy_dec_origin(d);
	rc = need_namespace(d, ns);
	if (rc == GPUQ_OK)
		rc = policy_dec_register(d, POLICY_K_CLAIMTEMPLATE, t->namespace_, t->name, t);
	return rc;
}

/* ---- RuntimeClass ---- */

/* node.k8s.io/v1 RuntimeClass: its name and overhead.podFixed; the rest
 * (handler, scheduling) is the kubelet's and the scheduler's. */
static int decode_runtimeclass(policy_dec_t *d, const json_t *obj)
{
	const json_t *overhead = NULL;
	policy_runtimeclass_t *rt;
	const char *name;
	size_t old;
	int rc = policy_dec_meta(d, obj, "RuntimeClass", false, false, NULL, &name);

	if (rc == GPUQ_OK)
		rc = policy_jdec_obj(&d->j, obj, "overhead", false, &overhead);
	rt = rc ? NULL : policy_arena_alloc(&d->p->arena, sizeof(*rt));
	if (rc == GPUQ_OK && (!rt || !(rt->name = policy_arena_strdup(&d->p->arena, name))))
		rc = policy_oom(d->j.diag);
	if (rc)
		return rc;
	rt->overhead.n = 0;
	old = policy_jdec_key(&d->j, "overhead");
	if (overhead)
		rc = policy_dec_reslist(d, overhead, "podFixed", &rt->overhead);
	policy_jdec_pop(&d->j, old);
	if (rc)
		return rc;
	rt->origin = policy_dec_origin(d);
	return policy_dec_register(d, POLICY_K_RUNTIMECLASS, "", rt->name, rt);
}

/* ---- Dispatch ---- */

static const char *const API_CORE[] = {"v1", NULL};
static const char *const API_SCHED[] = {"scheduling.k8s.io/v1", NULL};
static const char *const API_QUEUE[] = {"gpuq.dev/v1beta1", "kueue.x-k8s.io/v1beta1",
					"kueue.x-k8s.io/v1beta2", NULL};
static const char *const API_NODE[] = {"node.k8s.io/v1", NULL};
static const char *const API_DRA[] = {"resource.k8s.io/v1", "resource.k8s.io/v1beta2",
				      "resource.k8s.io/v1beta1", NULL};

typedef struct {
	const char *kind;				   /* kind field */
	const char *const *apis;			   /* apiVersions accepted */
	int (*decode)(policy_dec_t *d, const json_t *obj); /* its decoder */
} kind_t;

static const kind_t KINDS[] = {
    {"Namespace", API_CORE, decode_namespace},
    {"LimitRange", API_CORE, decode_limitrange},
    {"ResourceQuota", API_CORE, decode_quota},
    {"PriorityClass", API_SCHED, decode_priorityclass},
    {"ResourceFlavor", API_QUEUE, policy_decode_flavor},
    {"Topology", API_QUEUE, policy_decode_topology},
    {"ClusterQueue", API_QUEUE, policy_decode_cq},
    {"LocalQueue", API_QUEUE, policy_decode_lq},
    {"Cohort", API_QUEUE, policy_decode_cohort},
    {"ResourceClaimTemplate", API_DRA, decode_claimtemplate},
    {"RuntimeClass", API_NODE, decode_runtimeclass},
};

static int wrong_api(policy_dec_t *d, const kind_t *k, const char *api)
{
	char want[256] = "";
	size_t used = 0;

	for (size_t i = 0; k->apis[i] && used < sizeof(want); i++)
		used += (size_t)snprintf(want + used, sizeof(want) - used, "%s%s",
					 i ? (k->apis[i + 1] ? ", " : " or ") : "", k->apis[i]);
	return gpuq_diag_set(d->j.diag, GPUQ_EINVAL,
			     "%s: apiVersion \"%.100s\" is not one gpuq reads (want %s)", k->kind,
			     api, want);
}

/* The workloads gpuq admits, which opts.skip_workloads leaves out. */
static const struct {
	const char *kind, *api;
} WORKLOADS[] = {{"Job", "batch/v1"}, {"Pod", "v1"}};

/* List a workload object as skipped, when opts.skip_workloads asks for it;
 * GPUQ_ENOTFOUND when obj is not one. */
static int skip_workload(policy_t *p, const char *kind, const char *api, gpuq_diag_t *diag)
{
	policy_skipped_t *s;

	for (size_t i = 0; p->opts.skip_workloads && i < sizeof(WORKLOADS) / sizeof(WORKLOADS[0]);
	     i++) {
		if (strcmp(kind, WORKLOADS[i].kind) != 0 || strcmp(api, WORKLOADS[i].api) != 0)
			continue;
		if (p->n_objects >= POLICY_OBJECTS_MAX)
			return gpuq_diag_set(diag, GPUQ_ELIMIT, "%s: more than %d objects", kind,
					     POLICY_OBJECTS_MAX);
		s = policy_arena_alloc(&p->arena, sizeof(*s));
		if (!s || policy_vec_push(&p->skipped, s))
			return policy_oom(diag);
		s->kind = WORKLOADS[i].kind;
		s->api_version = WORKLOADS[i].api;
		s->origin = p->origin;
		p->n_objects++;
		return GPUQ_OK;
	}
	return GPUQ_ENOTFOUND;
}

int policy_decode_object(policy_t *p, const json_t *obj, gpuq_diag_t *diag)
{
	const json_t *kind = json_object_get(obj, "kind"),
		     *api = json_object_get(obj, "apiVersion");
	policy_dec_t *d;
	int rc = GPUQ_EINVAL;

	if (!json_is_object(obj))
		return gpuq_diag_set(diag, GPUQ_EINVAL, "an object must be a mapping");
	if (!json_is_string(kind))
		return gpuq_diag_set(diag, GPUQ_EINVAL, "kind: required (a string)");
	if (!json_is_string(api))
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%.100s: apiVersion: required (a string)",
				     json_string_value(kind));
	for (size_t i = 0; i < sizeof(KINDS) / sizeof(KINDS[0]); i++) {
		const kind_t *k = &KINDS[i];

		if (strcmp(k->kind, json_string_value(kind)) != 0)
			continue;
		d = calloc(1, sizeof(*d)); /* 1.5 KiB: kept off the stack */
		if (!d)
			return policy_oom(diag);
		policy_jdec_init(&d->j, diag, NULL);
		d->p = p;
		d->api = json_string_value(api);
		if (!in_list(d->api, k->apis))
			rc = wrong_api(d, k, d->api);
		else
			rc = k->decode(d, obj);
		free(d);
		return rc;
	}
	rc = skip_workload(p, json_string_value(kind), json_string_value(api), diag);
	if (rc != GPUQ_ENOTFOUND)
		return rc;
	if (p->opts.skip_unknown_kinds)
		return GPUQ_OK;
	return gpuq_diag_set(diag, GPUQ_EINVAL,
			     "kind \"%.100s\" (apiVersion \"%.100s\") is not a policy object; gpuq "
			     "reads Namespace, LimitRange, ResourceQuota, PriorityClass, "
			     "ResourceFlavor, Topology, ClusterQueue, LocalQueue, Cohort, "
			     "ResourceClaimTemplate and RuntimeClass",
			     json_string_value(kind), json_string_value(api));
}

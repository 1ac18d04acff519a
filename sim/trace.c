/* sim/trace.c: reading a trace file into a policy snapshot and an arrival table. */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "policy/policy_json.h"
#include "queue/queue.h"
#include "quota/quota.h"
#include "sim/sim.h"

/* The trace goes through the policy module's manifest parser, which refuses
 * files over POLICY_FILE_MAX. */
_Static_assert(SIM_TRACE_BYTES_MAX <= POLICY_FILE_MAX, "trace cap above the manifest cap");

#define RES_MAX 64    /* distinct resource names in one trace */
#define PATH_MAX_ 256 /* a field path in messages */
#define VARS_MAX SIM_OBJECTSET_DEPTH

struct loader {
	const char *name; /* file name for messages */
	policy_t *policy; /* under construction */
	json_t *trace;	  /* deep copy of the Trace document */
	size_t trace_doc; /* its document number */
};

/* ---- small helpers ---- */

/* Format a field path for messages; a path that does not fit is cut short. */
static void pathf(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void pathf(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
}

/* First pass over the documents: keep the Trace, refuse kinds that are
 * neither a Trace nor a policy object (the policy itself is loaded by
 * policy_add_manifest, which skips the Trace and remembers each object's file
 * and document for its messages). */
static int on_doc(void *ctx, size_t doc, const json_t *obj, gpuq_diag_t *diag)
{
	static const char *const policy_kinds[] = {"Namespace",
						   "LimitRange",
						   "ResourceQuota",
						   "PriorityClass",
						   "ResourceFlavor",
						   "ClusterQueue",
						   "LocalQueue",
						   "Cohort",
						   "ResourceClaimTemplate",
						   NULL};
	struct loader *l = ctx;
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	const char *api = json_string_value(json_object_get(obj, "apiVersion"));

	if (!kind || strcmp(kind, "Trace") != 0) {
		for (size_t i = 0; kind && policy_kinds[i]; i++)
			if (!strcmp(kind, policy_kinds[i]))
				return GPUQ_OK;
		return gpuq_diag_set(
		    diag, GPUQ_EINVAL,
		    "kind \"%.100s\" (apiVersion \"%.100s\") is neither a Trace nor "
		    "a policy object",
		    kind ? kind : "", api ? api : "");
	}
	if (!api || strcmp(api, "gpuq.dev/v1beta1") != 0)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "Trace: apiVersion: must be \"gpuq.dev/v1beta1\", not \"%s\"",
				     api ? api : "");
	if (l->trace)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "Trace: a second Trace document (the first is document %zu)",
				     l->trace_doc);
	l->trace = json_deep_copy(obj);
	if (!l->trace)
		return GPUQ_ENOMEM;
	l->trace_doc = doc;
	return GPUQ_OK;
}

/* A short description of a JSON value for messages: the scalar itself
 * (strings quoted, cut at 60 bytes) or "a mapping" / "a list". */
static const char *shown(const json_t *v, char *buf, size_t cap)
{
	if (json_is_string(v))
		snprintf(buf, cap, "\"%.60s%s\"", json_string_value(v),
			 json_string_length(v) > 60 ? "..." : "");
	else if (json_is_integer(v))
		snprintf(buf, cap, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, cap, "%g", json_real_value(v));
	else if (json_is_boolean(v))
		snprintf(buf, cap, "%s", json_is_true(v) ? "true" : "false");
	else if (json_is_null(v))
		snprintf(buf, cap, "null");
	else
		snprintf(buf, cap, "%s", json_is_object(v) ? "a mapping" : "a list");
	return buf;
}
#define SHOWN_MAX 72 /* 60 bytes of a string, quotes, "..." */

/* Refuse any key of obj not in allowed (NULL-terminated). */
static int check_keys(const json_t *obj, const char *const *allowed, const char *path,
		      gpuq_diag_t *diag)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v)
	{
		size_t i = 0;
		while (allowed[i] && strcmp(allowed[i], key) != 0)
			i++;
		if (!allowed[i])
			return gpuq_diag_set(diag, GPUQ_EINVAL, "%s%s%s: unknown field", path,
					     *path ? "." : "", key);
	}
	return GPUQ_OK;
}

static int want_object(const json_t *v, const char *path, gpuq_diag_t *diag)
{
	char sv[SHOWN_MAX];
	if (!json_is_object(v))
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s: must be a mapping, not %s", path,
				     shown(v, sv, sizeof(sv)));
	return GPUQ_OK;
}

static int want_array(const json_t *v, size_t max, const char *path, gpuq_diag_t *diag)
{
	char sv[SHOWN_MAX];
	if (!json_is_array(v))
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s: must be a list, not %s", path,
				     shown(v, sv, sizeof(sv)));
	if (json_array_size(v) > max)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "%s: %zu entries, at most %zu allowed",
				     path, json_array_size(v), max);
	return GPUQ_OK;
}

static int get_string(const json_t *obj, const char *key, const char *path, bool required,
		      const char **out, gpuq_diag_t *diag)
{
	char sv[SHOWN_MAX];
	const json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (!v || json_is_null(v)) {
		if (required)
			return gpuq_diag_set(diag, GPUQ_EINVAL, "%s.%s: required", path, key);
		return GPUQ_OK;
	}
	if (!json_is_string(v))
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s.%s: must be a string, not %s", path,
				     key, shown(v, sv, sizeof(sv)));
	if (json_string_length(v) == 0 || json_string_length(v) >= SIM_NAME_MAX)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s.%s: length must be 1..%d, not %zu",
				     path, key, SIM_NAME_MAX - 1, json_string_length(v));
	*out = json_string_value(v);
	return GPUQ_OK;
}

/* An integer field in [lo, hi]; absent leaves *out unchanged unless required. */
static int get_int(const json_t *obj, const char *key, const char *path, bool required, int64_t lo,
		   int64_t hi, int64_t *out, gpuq_diag_t *diag)
{
	char sv[SHOWN_MAX];
	const json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v)) {
		if (required)
			return gpuq_diag_set(diag, GPUQ_EINVAL, "%s.%s: required", path, key);
		return GPUQ_OK;
	}
	if (!json_is_integer(v))
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s.%s: must be an integer, not %s", path,
				     key, shown(v, sv, sizeof(sv)));
	if (json_integer_value(v) < lo || json_integer_value(v) > hi)
		return gpuq_diag_set(diag, GPUQ_ERANGE,
				     "%s.%s: %" JSON_INTEGER_FORMAT " is out of range %" PRId64
				     "..%" PRId64,
				     path, key, json_integer_value(v), lo, hi);
	*out = json_integer_value(v);
	return GPUQ_OK;
}

static int get_bool(const json_t *obj, const char *key, const char *path, bool *out,
		    gpuq_diag_t *diag)
{
	char sv[SHOWN_MAX];
	const json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v))
		return GPUQ_OK;
	if (!json_is_boolean(v))
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s.%s: must be true or false, not %s",
				     path, key, shown(v, sv, sizeof(sv)));
	*out = json_is_true(v);
	return GPUQ_OK;
}

/* A duration field: an integer (milliseconds) or a string. */
static int get_duration(const json_t *obj, const char *key, const char *path, bool required,
			int64_t *out, gpuq_diag_t *diag)
{
	char sv[SHOWN_MAX];
	const json_t *v = json_object_get(obj, key);
	int rc;

	if (!v || json_is_null(v)) {
		if (required)
			return gpuq_diag_set(diag, GPUQ_EINVAL, "%s.%s: required", path, key);
		return GPUQ_OK;
	}
	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0 || json_integer_value(v) > SIM_TIME_MAX_MS)
			return gpuq_diag_set(diag, GPUQ_ERANGE,
					     "%s.%s: %" JSON_INTEGER_FORMAT
					     " ms is outside 0..10 years",
					     path, key, json_integer_value(v));
		*out = json_integer_value(v);
		return GPUQ_OK;
	}
	if (!json_is_string(v))
		return gpuq_diag_set(
		    diag, GPUQ_EINVAL,
		    "%s.%s: must be milliseconds or a string like \"1.5s\", not %s", path, key,
		    shown(v, sv, sizeof(sv)));
	rc = gpuq_duration_parse(json_string_value(v), out, diag);
	if (rc)
		gpuq_diag_prefix(diag, "%s.%s: ", path, key);
	return rc;
}

/* ---- object sets: stamping out policy objects from templates ---- */

struct vars {
	const char *name[VARS_MAX]; /* placeholder names, "{name}" in strings */
	int64_t value[VARS_MAX];    /* their current values */
	size_t n;		    /* entries in use */
};

/* s with every "{var}" replaced; NULL on ENOMEM or when the result is too long. */
static char *substitute(const char *s, const struct vars *vars)
{
	char out[POLICY_STRING_MAX];
	size_t o = 0;

	while (*s) {
		size_t i;
		for (i = 0; i < vars->n; i++) {
			size_t len = strlen(vars->name[i]);
			if (s[0] == '{' && !strncmp(s + 1, vars->name[i], len) && s[len + 1] == '}')
				break;
		}
		if (i < vars->n) {
			int w = snprintf(out + o, sizeof(out) - o, "%" PRId64, vars->value[i]);
			if (w < 0 || (size_t)w >= sizeof(out) - o)
				return NULL;
			o += (size_t)w;
			s += strlen(vars->name[i]) + 2;
			continue;
		}
		if (o + 1 >= sizeof(out))
			return NULL;
		out[o++] = *s++;
	}
	out[o] = '\0';
	return strdup(out);
}

static int substitute_all(json_t *v, const struct vars *vars)
{
	const char *key;
	json_t *item;
	size_t i;

	if (json_is_object(v)) {
		json_object_foreach(v, key, item)
		{
			int rc = substitute_all(item, vars);
			if (rc)
				return rc;
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, item)
		{
			int rc = substitute_all(item, vars);
			if (rc)
				return rc;
		}
	} else if (json_is_string(v)) {
		char *s = substitute(json_string_value(v), vars);
		int rc;
		if (!s)
			return GPUQ_ELIMIT;
		rc = json_string_set(v, s) ? GPUQ_ENOMEM : GPUQ_OK;
		free(s);
		return rc;
	}
	return GPUQ_OK;
}

static int expand_sets(struct loader *l, const json_t *sets, const char *path, struct vars *vars,
		       size_t *made, gpuq_diag_t *diag);

static int expand_one(struct loader *l, const json_t *set, const char *path, struct vars *vars,
		      size_t *made, gpuq_diag_t *diag)
{
	static const char *const keys[] = {"count",   "index",	    "start",
					   "objects", "objectSets", NULL};
	const char *index = "i";
	const json_t *objects = json_object_get(set, "objects");
	const json_t *inner = json_object_get(set, "objectSets");
	int64_t count = 0, start = 0;
	char p[PATH_MAX_];
	int rc;

	rc = want_object(set, path, diag);
	if (!rc)
		rc = check_keys(set, keys, path, diag);
	if (!rc)
		rc = get_int(set, "count", path, true, 1, SIM_OBJECTS_MAX, &count, diag);
	if (!rc)
		rc = get_int(set, "start", path, false, 0, 1000000000, &start, diag);
	if (!rc)
		rc = get_string(set, "index", path, false, &index, diag);
	if (rc)
		return rc;
	if (!index)
		index = "i";
	if (vars->n >= VARS_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "%s: object sets nest deeper than %d", path,
				     VARS_MAX);
	if (objects) {
		pathf(p, sizeof(p), "%s.objects", path);
		rc = want_array(objects, 1000, p, diag);
		if (rc)
			return rc;
	}
	vars->name[vars->n] = index;
	vars->n++;
	for (int64_t k = 0; k < count && !rc; k++) {
		size_t i;
		const json_t *tmpl;
		vars->value[vars->n - 1] = start + k;
		json_array_foreach(objects, i, tmpl)
		{
			json_t *obj;
			if (++*made > SIM_OBJECTS_MAX) {
				rc = gpuq_diag_set(diag, GPUQ_ELIMIT,
						   "%s: object sets make more than %d objects",
						   path, SIM_OBJECTS_MAX);
				break;
			}
			obj = json_deep_copy(tmpl);
			if (!obj) {
				rc = GPUQ_ENOMEM;
				break;
			}
			rc = substitute_all(obj, vars);
			if (rc == GPUQ_ELIMIT)
				gpuq_diag_set(diag, rc,
					      "%s.objects[%zu]: a string grows past %d bytes", path,
					      i, POLICY_STRING_MAX);
			if (!rc) {
				rc = policy_add_json(l->policy, obj, diag);
				if (rc)
					gpuq_diag_prefix(diag,
							 "%s.objects[%zu] (%s=%" PRId64 "): ", path,
							 i, index, start + k);
			}
			json_decref(obj);
			if (rc)
				break;
		}
		if (!rc && inner) {
			pathf(p, sizeof(p), "%s.objectSets", path);
			rc = expand_sets(l, inner, p, vars, made, diag);
		}
	}
	vars->n--;
	return rc;
}

static int expand_sets(struct loader *l, const json_t *sets, const char *path, struct vars *vars,
		       size_t *made, gpuq_diag_t *diag)
{
	const json_t *set;
	size_t i;
	int rc = want_array(sets, 100, path, diag);

	if (rc)
		return rc;
	json_array_foreach(sets, i, set)
	{
		char p[PATH_MAX_];
		pathf(p, sizeof(p), "%s[%zu]", path, i);
		rc = expand_one(l, set, p, vars, made, diag);
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* ---- interning ---- */

static int intern(char ***names, size_t *n, size_t max, const char *name, uint16_t *out)
{
	char **grown;

	for (size_t i = 0; i < *n; i++) {
		if (!strcmp((*names)[i], name)) {
			*out = (uint16_t)i;
			return GPUQ_OK;
		}
	}
	if (*n >= max)
		return GPUQ_ELIMIT;
	grown = realloc(*names, (*n + 1) * sizeof(**names));
	if (!grown)
		return GPUQ_ENOMEM;
	*names = grown;
	grown[*n] = strdup(name);
	if (!grown[*n])
		return GPUQ_ENOMEM;
	*out = (uint16_t)*n;
	(*n)++;
	return GPUQ_OK;
}

/* ---- pod sets ---- */

static int parse_requests(sim_trace_t *t, const json_t *reqs, sim_podset_t *ps, const char *path,
			  gpuq_diag_t *diag)
{
	char sv[SHOWN_MAX];
	const char *res;
	json_t *v;
	int rc = want_object(reqs, path, diag);

	if (rc)
		return rc;
	if (json_object_size(reqs) > SIM_POD_RES_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "%s: %zu resources, at most %d", path,
				     json_object_size(reqs), SIM_POD_RES_MAX);
	json_object_foreach((json_t *)reqs, res, v)
	{
		char text[QUOTA_QTY_STR_MAX + 1];
		quota_qty_t q;
		sim_req_t *r = &ps->req[ps->n_req];

		if (json_is_integer(v))
			snprintf(text, sizeof(text), "%" JSON_INTEGER_FORMAT,
				 json_integer_value(v));
		else if (json_is_string(v) && json_string_length(v) <= QUOTA_QTY_STR_MAX)
			gpuq_strlcpy(text, json_string_value(v), sizeof(text));
		else
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "%s.%s: must be a quantity such as 1, \"2\" or "
					     "\"500m\", not %s",
					     path, res, shown(v, sv, sizeof(sv)));
		rc = quota_qty_parse(text, strlen(text), &q, diag);
		if (rc) {
			gpuq_diag_prefix(diag, "%s.%s: ", path, res);
			return rc;
		}
		if (strlen(res) >= QUOTA_RES_NAME_MAX || !*res)
			return gpuq_diag_set(diag, GPUQ_EINVAL, "%s: bad resource name \"%s\"",
					     path, res);
		if (strcmp(res, "cpu") != 0 && !quota_qty_is_integer(&q))
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "%s.%s: \"%s\" is not a whole number (only cpu may "
					     "ask for a fraction)",
					     path, res, text);
		r->amount = quota_qty_amount(res, &q);
		if (r->amount < 0)
			return gpuq_diag_set(diag, GPUQ_EINVAL, "%s.%s: negative quantity \"%s\"",
					     path, res, text);
		rc = intern(&t->res_names, &t->n_res, RES_MAX, res, &r->res);
		if (rc == GPUQ_ELIMIT)
			return gpuq_diag_set(diag, rc, "%s.%s: more than %d distinct resources",
					     path, res, RES_MAX);
		if (rc)
			return rc;
		ps->n_req++;
	}
	return GPUQ_OK;
}

static int parse_selector(const json_t *sel, sim_podset_t *ps, const char *path, gpuq_diag_t *diag)
{
	char sv[SHOWN_MAX];
	const char *key;
	json_t *v;
	int rc = want_object(sel, path, diag);

	if (rc)
		return rc;
	if (json_object_size(sel) > SIM_SELECTOR_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "%s: %zu entries, at most %d", path,
				     json_object_size(sel), SIM_SELECTOR_MAX);
	ps->sel = calloc(json_object_size(sel) + 1, sizeof(*ps->sel));
	if (!ps->sel)
		return GPUQ_ENOMEM;
	json_object_foreach((json_t *)sel, key, v)
	{
		if (!json_is_string(v))
			return gpuq_diag_set(diag, GPUQ_EINVAL, "%s.%s: must be a string, not %s",
					     path, key, shown(v, sv, sizeof(sv)));
		ps->sel[ps->n_sel].key = strdup(key);
		ps->sel[ps->n_sel].value = strdup(json_string_value(v));
		ps->n_sel++;
		if (!ps->sel[ps->n_sel - 1].key || !ps->sel[ps->n_sel - 1].value)
			return GPUQ_ENOMEM;
	}
	return GPUQ_OK;
}

static int parse_tolerations(const json_t *tols, sim_podset_t *ps, const char *path,
			     gpuq_diag_t *diag)
{
	static const char *const keys[] = {"key",    "operator",	  "value",
					   "effect", "tolerationSeconds", NULL};
	const json_t *tol;
	size_t i;
	int rc = want_array(tols, SIM_TOLERATIONS_MAX, path, diag);

	if (rc)
		return rc;
	ps->tol = calloc(json_array_size(tols) + 1, sizeof(*ps->tol));
	if (!ps->tol)
		return GPUQ_ENOMEM;
	json_array_foreach(tols, i, tol)
	{
		char p[PATH_MAX_];
		const char *key = NULL, *op = NULL, *value = NULL, *effect = NULL;
		sim_toleration_t *out = &ps->tol[ps->n_tol];

		pathf(p, sizeof(p), "%s[%zu]", path, i);
		rc = want_object(tol, p, diag);
		if (!rc)
			rc = check_keys(tol, keys, p, diag);
		if (!rc && json_object_get(tol, "key") &&
		    json_string_length(json_object_get(tol, "key")))
			rc = get_string(tol, "key", p, false, &key, diag);
		if (!rc)
			rc = get_string(tol, "operator", p, false, &op, diag);
		if (!rc && json_object_get(tol, "value") &&
		    json_string_length(json_object_get(tol, "value")))
			rc = get_string(tol, "value", p, false, &value, diag);
		if (!rc && json_object_get(tol, "effect") &&
		    json_string_length(json_object_get(tol, "effect")))
			rc = get_string(tol, "effect", p, false, &effect, diag);
		if (rc)
			return rc;
		if (op && strcmp(op, "Equal") != 0 && strcmp(op, "Exists") != 0)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "%s.operator: must be Equal or Exists, not \"%s\"", p,
					     op);
		if (effect && strcmp(effect, "NoSchedule") != 0 &&
		    strcmp(effect, "PreferNoSchedule") != 0 && strcmp(effect, "NoExecute") != 0)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "%s.effect: must be NoSchedule, PreferNoSchedule or "
					     "NoExecute, not \"%s\"",
					     p, effect);
		out->key = strdup(key ? key : "");
		out->op = strdup(op ? op : "Equal");
		out->value = strdup(value ? value : "");
		out->effect = strdup(effect ? effect : "");
		ps->n_tol++;
		if (!out->key || !out->op || !out->value || !out->effect)
			return GPUQ_ENOMEM;
	}
	return GPUQ_OK;
}

static int parse_podset(sim_trace_t *t, const json_t *obj, sim_podset_t *ps, const char *path,
			gpuq_diag_t *diag)
{
	static const char *const keys[] = {"name",	   "count",	  "requests",
					   "nodeSelector", "tolerations", NULL};
	const char *name = NULL;
	int64_t count = 1;
	char p[PATH_MAX_];
	int rc = want_object(obj, path, diag);

	if (!rc)
		rc = check_keys(obj, keys, path, diag);
	if (!rc)
		rc = get_string(obj, "name", path, false, &name, diag);
	if (!rc)
		rc = get_int(obj, "count", path, false, 1, SIM_PODS_MAX, &count, diag);
	if (rc)
		return rc;
	ps->name = strdup(name ? name : "main");
	if (!ps->name)
		return GPUQ_ENOMEM;
	ps->count = (uint32_t)count;
	if (!json_object_get(obj, "requests"))
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s.requests: required", path);
	pathf(p, sizeof(p), "%s.requests", path);
	rc = parse_requests(t, json_object_get(obj, "requests"), ps, p, diag);
	for (size_t i = 0; !rc && i < ps->n_req; i++)
		if (ps->req[i].amount > QUEUE_AMOUNT_MAX / count)
			rc = gpuq_diag_set(diag, GPUQ_ERANGE,
					   "%s.%s: %" PRId64 " pods x %" PRId64
					   " is more than the %" PRId64 " one pod set may ask for",
					   p, t->res_names[ps->req[i].res], count,
					   ps->req[i].amount, QUEUE_AMOUNT_MAX);
	if (!rc && json_object_get(obj, "nodeSelector")) {
		pathf(p, sizeof(p), "%s.nodeSelector", path);
		rc = parse_selector(json_object_get(obj, "nodeSelector"), ps, p, diag);
	}
	if (!rc && json_object_get(obj, "tolerations")) {
		pathf(p, sizeof(p), "%s.tolerations", path);
		rc = parse_tolerations(json_object_get(obj, "tolerations"), ps, p, diag);
	}
	return rc;
}

/* Parse podSets, gang and readyDelay of obj into a new shape; *out its index. */
static int parse_shape(sim_trace_t *t, const json_t *obj, const char *path, uint32_t *out,
		       gpuq_diag_t *diag)
{
	const json_t *sets = json_object_get(obj, "podSets");
	const json_t *ps;
	sim_shape_t *sh, *grown;
	char p[PATH_MAX_];
	size_t i;
	int rc;

	if (!sets)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s.podSets: required", path);
	pathf(p, sizeof(p), "%s.podSets", path);
	rc = want_array(sets, SIM_PODSETS_MAX, p, diag);
	if (rc)
		return rc;
	if (json_array_size(sets) == 0)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s: needs at least one pod set", p);
	grown = realloc(t->shapes, (t->n_shapes + 1) * sizeof(*t->shapes));
	if (!grown)
		return GPUQ_ENOMEM;
	t->shapes = grown;
	sh = &t->shapes[t->n_shapes];
	memset(sh, 0, sizeof(*sh));
	sh->ready_delay_ms = -1;
	t->n_shapes++;
	sh->podsets = calloc(json_array_size(sets), sizeof(*sh->podsets));
	if (!sh->podsets)
		return GPUQ_ENOMEM;
	json_array_foreach(sets, i, ps)
	{
		pathf(p, sizeof(p), "%s.podSets[%zu]", path, i);
		sh->n_podsets++;
		rc = parse_podset(t, ps, &sh->podsets[i], p, diag);
		if (rc)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(sh->podsets[j].name, sh->podsets[i].name))
				return gpuq_diag_set(diag, GPUQ_EINVAL,
						     "%s.name: duplicate pod set name \"%s\"", p,
						     sh->podsets[i].name);
	}
	rc = get_bool(obj, "gang", path, &sh->gang, diag);
	if (!rc)
		rc = get_duration(obj, "readyDelay", path, false, &sh->ready_delay_ms, diag);
	*out = (uint32_t)(t->n_shapes - 1);
	return rc;
}

/* ---- priorities, classes, queues ---- */

static int resolve_priority(const sim_trace_t *t, const json_t *obj, const char *path, int32_t *out,
			    gpuq_diag_t *diag)
{
	const char *pc = NULL;
	int64_t value = 0;
	const policy_priorityclass_t *def = policy_priorityclass_default(t->policy);
	int rc = get_string(obj, "priorityClass", path, false, &pc, diag);

	if (!rc)
		rc = get_int(obj, "priority", path, false, -2147483647 - 1, 1000000000, &value,
			     diag);
	if (rc)
		return rc;
	if (pc && json_object_get(obj, "priority"))
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "%s: give priorityClass or priority, not both", path);
	if (pc) {
		const policy_priorityclass_t *c = policy_priorityclass_find(t->policy, pc);
		if (!c)
			return gpuq_diag_set(diag, GPUQ_ENOTFOUND,
					     "%s.priorityClass: no PriorityClass \"%s\"", path, pc);
		*out = c->value;
	} else if (json_object_get(obj, "priority")) {
		*out = (int32_t)value;
	} else {
		*out = def ? def->value : 0;
	}
	return GPUQ_OK;
}

static int resolve_class(sim_trace_t *t, const json_t *obj, const char *path, uint16_t *out,
			 gpuq_diag_t *diag)
{
	const char *name = NULL;
	int rc = get_string(obj, "class", path, false, &name, diag);

	if (rc)
		return rc;
	rc = intern(&t->classes, &t->n_classes, SIM_CLASSES_MAX, name ? name : "", out);
	if (rc == GPUQ_ELIMIT)
		return gpuq_diag_set(diag, rc, "%s.class: more than %d classes", path,
				     SIM_CLASSES_MAX - 1);
	return rc;
}

static int find_lq(const sim_trace_t *t, const char *ref, const char *path, uint32_t *out,
		   gpuq_diag_t *diag)
{
	char ns[SIM_NAME_MAX];
	const char *slash = ref ? strchr(ref, '/') : NULL;
	const policy_lq_t *lq;

	if (!ref || !slash || slash == ref || !slash[1] || (size_t)(slash - ref) >= sizeof(ns))
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s: \"%s\" is not \"namespace/name\"",
				     path, ref ? ref : "");
	memcpy(ns, ref, (size_t)(slash - ref));
	ns[slash - ref] = '\0';
	lq = policy_lq_find(t->policy, ns, slash + 1);
	if (!lq)
		return gpuq_diag_set(diag, GPUQ_ENOTFOUND, "%s: no LocalQueue \"%s\"", path, ref);
	for (size_t i = 0; i < t->n_lqs; i++) {
		if (policy_lq_at(t->policy, i) == lq) {
			*out = (uint32_t)i;
			return GPUQ_OK;
		}
	}
	return GPUQ_ENOTFOUND;
}

static int push_arrival(sim_trace_t *t, size_t *cap, const sim_arrival_t *a)
{
	if (t->n_arrivals >= *cap) {
		size_t ncap = *cap ? *cap * 2 : 1024;
		sim_arrival_t *grown = realloc(t->arrivals, ncap * sizeof(*grown));
		if (!grown)
			return GPUQ_ENOMEM;
		t->arrivals = grown;
		*cap = ncap;
	}
	t->arrivals[t->n_arrivals++] = *a;
	return GPUQ_OK;
}

static const char *const workload_keys[] = {"at",	"name",	      "localQueue", "priorityClass",
					    "priority", "class",      "podSets",    "runtime",
					    "gang",	"readyDelay", NULL};

static int parse_arrival(sim_trace_t *t, const json_t *obj, const char *path, size_t *cap,
			 gpuq_diag_t *diag)
{
	sim_arrival_t a;
	const char *name = NULL, *lq = NULL;
	char p[PATH_MAX_];
	char **grown;
	int rc;

	memset(&a, 0, sizeof(a));
	rc = want_object(obj, path, diag);
	if (!rc)
		rc = check_keys(obj, workload_keys, path, diag);
	if (!rc)
		rc = get_duration(obj, "at", path, true, &a.at_ms, diag);
	if (!rc)
		rc = get_string(obj, "name", path, true, &name, diag);
	if (!rc)
		rc = get_string(obj, "localQueue", path, true, &lq, diag);
	if (!rc) {
		pathf(p, sizeof(p), "%s.localQueue", path);
		rc = find_lq(t, lq, p, &a.lq, diag);
	}
	if (!rc)
		rc = get_duration(obj, "runtime", path, true, &a.runtime_ms, diag);
	if (!rc && a.runtime_ms < 1)
		rc = gpuq_diag_set(diag, GPUQ_EINVAL, "%s.runtime: must be at least 1ms", path);
	if (!rc)
		rc = resolve_priority(t, obj, path, &a.priority, diag);
	if (!rc)
		rc = resolve_class(t, obj, path, &a.class_id, diag);
	if (!rc)
		rc = parse_shape(t, obj, path, &a.shape, diag);
	if (rc)
		return rc;
	a.source = SIM_SOURCE_EXPLICIT;
	a.seq = (uint32_t)t->n_names;
	grown = realloc(t->names, (t->n_names + 1) * sizeof(*grown));
	if (!grown)
		return GPUQ_ENOMEM;
	t->names = grown;
	t->names[t->n_names] = strdup(name ? name : "");
	if (!t->names[t->n_names])
		return GPUQ_ENOMEM;
	t->n_names++;
	return push_arrival(t, cap, &a);
}

/* The LocalQueues a generator feeds: localQueues (a list) or localQueuePattern (a
 * glob over "namespace/name"). */
static int generator_lqs(sim_trace_t *t, const json_t *obj, const char *path, uint32_t **out,
			 size_t *n, gpuq_diag_t *diag)
{
	char sv[SHOWN_MAX];
	const json_t *list = json_object_get(obj, "localQueues");
	const char *pattern = NULL;
	char p[PATH_MAX_];
	int rc = get_string(obj, "localQueuePattern", path, false, &pattern, diag);

	if (rc)
		return rc;
	if (!!list == !!pattern)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "%s: give exactly one of localQueues and localQueuePattern",
				     path);
	*out = calloc(t->n_lqs + 1, sizeof(**out));
	if (!*out)
		return GPUQ_ENOMEM;
	*n = 0;
	if (list) {
		const json_t *v;
		size_t i;
		pathf(p, sizeof(p), "%s.localQueues", path);
		rc = want_array(list, t->n_lqs, p, diag);
		if (rc)
			return rc;
		json_array_foreach(list, i, v)
		{
			char pi[PATH_MAX_];
			pathf(pi, sizeof(pi), "%s[%zu]", p, i);
			if (!json_is_string(v))
				return gpuq_diag_set(diag, GPUQ_EINVAL,
						     "%s: must be a string, not %s", pi,
						     shown(v, sv, sizeof(sv)));
			rc = find_lq(t, json_string_value(v), pi, &(*out)[*n], diag);
			if (rc)
				return rc;
			(*n)++;
		}
		return GPUQ_OK;
	}
	for (size_t i = 0; i < t->n_lqs; i++) {
		const policy_lq_t *lq = policy_lq_at(t->policy, i);
		char ref[2 * SIM_NAME_MAX + 2];
		snprintf(ref, sizeof(ref), "%s/%s", lq->namespace_, lq->name);
		if (!fnmatch(pattern, ref, 0))
			(*out)[(*n)++] = (uint32_t)i;
	}
	if (*n == 0)
		return gpuq_diag_set(diag, GPUQ_ENOTFOUND,
				     "%s.localQueuePattern: \"%s\" matches no LocalQueue", path,
				     pattern);
	return GPUQ_OK;
}

static int parse_generator(sim_trace_t *t, const json_t *obj, const char *path, size_t *cap,
			   gpuq_diag_t *diag)
{
	static const char *const keys[] = {
	    "name",  "localQueues",   "localQueuePattern", "start",   "every",	  "count",
	    "class", "priorityClass", "priority",	   "runtime", "template", NULL};
	static const char *const tmpl_keys[] = {"podSets", "gang", "readyDelay", NULL};
	sim_arrival_t a;
	const char *name = NULL;
	const json_t *tmpl = json_object_get(obj, "template");
	int64_t every = 0, count = 0, start = -1;
	uint32_t *lqs = NULL;
	size_t n_lqs = 0;
	char p[PATH_MAX_];
	sim_generator_t *g;
	int rc;

	memset(&a, 0, sizeof(a));
	rc = want_object(obj, path, diag);
	if (!rc)
		rc = check_keys(obj, keys, path, diag);
	if (!rc)
		rc = get_string(obj, "name", path, true, &name, diag);
	for (size_t i = 0; !rc && i + 1 < t->n_gens; i++)
		if (!strcmp(t->gens[i].name, name))
			rc = gpuq_diag_set(diag, GPUQ_EEXIST,
					   "%s.name: duplicate generator name \"%s\"", path, name);
	if (!rc)
		rc = get_int(obj, "count", path, true, 1, SIM_WORKLOADS_MAX, &count, diag);
	if (!rc)
		rc = get_duration(obj, "every", path, count > 1, &every, diag);
	if (!rc && count > 1 && every == 0)
		rc = gpuq_diag_set(diag, GPUQ_EINVAL, "%s.every: must be above 0", path);
	if (!rc)
		rc = get_duration(obj, "start", path, false, &start, diag);
	if (!rc)
		rc = get_duration(obj, "runtime", path, true, &a.runtime_ms, diag);
	if (!rc && a.runtime_ms < 1)
		rc = gpuq_diag_set(diag, GPUQ_EINVAL, "%s.runtime: must be at least 1ms", path);
	if (!rc)
		rc = resolve_priority(t, obj, path, &a.priority, diag);
	if (!rc)
		rc = resolve_class(t, obj, path, &a.class_id, diag);
	if (!rc && !tmpl)
		rc = gpuq_diag_set(diag, GPUQ_EINVAL, "%s.template: required", path);
	pathf(p, sizeof(p), "%s.template", path);
	if (!rc)
		rc = want_object(tmpl, p, diag);
	if (!rc)
		rc = check_keys(tmpl, tmpl_keys, p, diag);
	if (!rc)
		rc = parse_shape(t, tmpl, p, &a.shape, diag);
	if (!rc)
		rc = generator_lqs(t, obj, path, &lqs, &n_lqs, diag);
	if (!rc && (uint64_t)count * n_lqs + t->n_arrivals > SIM_WORKLOADS_MAX)
		rc = gpuq_diag_set(diag, GPUQ_ELIMIT,
				   "%s: the trace would hold more than %d workloads", path,
				   SIM_WORKLOADS_MAX);
	if (!rc && start + (every * (count - 1)) > SIM_TIME_MAX_MS)
		rc = gpuq_diag_set(diag, GPUQ_ERANGE, "%s: arrivals run past 10 years", path);
	if (rc) {
		free(lqs);
		return rc;
	}
	if (start < 0)
		start = every; /* Kueue's generator waits one interval before each creation */
	g = &t->gens[t->n_gens - 1];
	g->name = strdup(name ? name : "");
	g->n_lqs = (uint32_t)n_lqs;
	a.source = (uint32_t)(t->n_gens - 1);
	for (size_t q = 0; q < n_lqs && !rc; q++) {
		a.lq = lqs[q];
		for (int64_t k = 0; k < count && !rc; k++) {
			a.at_ms = start + k * every;
			a.seq = (uint32_t)k;
			rc = push_arrival(t, cap, &a);
		}
	}
	free(lqs);
	return g->name ? rc : GPUQ_ENOMEM;
}

static int parse_options(sim_trace_t *t, const json_t *obj, gpuq_diag_t *diag)
{
	static const char *const keys[] = {
	    "cycleInterval",  "fairShareHalfLife",   "gangReadyDelay", "gangReadyTimeout",
	    "sampleInterval", "utilizationResource", "fairSharing",    NULL};
	const char *path = "spec.options";
	const char *res = NULL;
	sim_options_t *o = &t->opt;
	int rc;

	if (!obj)
		goto resource;
	rc = want_object(obj, path, diag);
	if (!rc)
		rc = check_keys(obj, keys, path, diag);
	if (!rc)
		rc = get_duration(obj, "cycleInterval", path, false, &o->cycle_interval_ms, diag);
	if (!rc)
		rc = get_duration(obj, "fairShareHalfLife", path, false, &o->half_life_ms, diag);
	if (!rc)
		rc =
		    get_duration(obj, "gangReadyDelay", path, false, &o->gang_ready_delay_ms, diag);
	if (!rc)
		rc = get_duration(obj, "gangReadyTimeout", path, false, &o->gang_ready_timeout_ms,
				  diag);
	if (!rc)
		rc = get_duration(obj, "sampleInterval", path, false, &o->sample_interval_ms, diag);
	if (!rc)
		rc = get_string(obj, "utilizationResource", path, false, &res, diag);
	if (!rc)
		rc = get_bool(obj, "fairSharing", path, &o->fair_sharing, diag);
	if (rc)
		return rc;
	if (o->sample_interval_ms < 1)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s.sampleInterval: must be at least 1ms",
				     path);
resource:
	o->util_resource = strdup(res ? res : "nvidia.com/gpu");
	return o->util_resource ? GPUQ_OK : GPUQ_ENOMEM;
}

static int arrival_cmp(const void *pa, const void *pb)
{
	const sim_arrival_t *a = pa, *b = pb;
	/* explicit arrivals (source UINT32_MAX) sort before generated ones */
	uint32_t sa = a->source + 1, sb = b->source + 1;

	if (a->at_ms != b->at_ms)
		return a->at_ms < b->at_ms ? -1 : 1;
	if (sa != sb)
		return sa < sb ? -1 : 1;
	if (a->lq != b->lq)
		return a->lq < b->lq ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int strcmp_ptr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Explicit names must be unique within their namespace. */
static int check_names(const sim_trace_t *t, gpuq_diag_t *diag)
{
	char **keys = calloc(t->n_names + 1, sizeof(*keys));
	size_t n = 0;
	int rc = GPUQ_OK;

	if (!keys)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < t->n_arrivals && !rc; i++) {
		const sim_arrival_t *a = &t->arrivals[i];
		const policy_lq_t *lq;
		if (a->source != SIM_SOURCE_EXPLICIT)
			continue;
		lq = policy_lq_at(t->policy, a->lq);
		if (asprintf(&keys[n], "%s/%s", lq->namespace_, t->names[a->seq]) < 0)
			rc = GPUQ_ENOMEM;
		else
			n++;
	}
	if (!rc)
		qsort(keys, n, sizeof(*keys), strcmp_ptr);
	for (size_t i = 1; i < n && !rc; i++)
		if (!strcmp(keys[i - 1], keys[i]))
			rc = gpuq_diag_set(diag, GPUQ_EEXIST,
					   "spec.arrivals: two workloads named \"%s\"", keys[i]);
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
	return rc;
}

static int parse_spec(sim_trace_t *t, const json_t *doc, gpuq_diag_t *diag)
{
	static const char *const top_keys[] = {"apiVersion", "kind", "metadata", "spec", NULL};
	static const char *const spec_keys[] = {"options", "objectSets", "arrivals", "generators",
						NULL};
	const json_t *spec = json_object_get(doc, "spec");
	const json_t *list, *v;
	size_t cap = 0, i;
	int rc;

	rc = check_keys(doc, top_keys, "", diag);
	if (!rc && !spec)
		rc = gpuq_diag_set(diag, GPUQ_EINVAL, "spec: required");
	if (!rc)
		rc = want_object(spec, "spec", diag);
	if (!rc)
		rc = check_keys(spec, spec_keys, "spec", diag);
	if (rc)
		return rc;
	list = json_object_get(spec, "arrivals");
	if (list) {
		rc = want_array(list, SIM_ARRIVALS_MAX, "spec.arrivals", diag);
		json_array_foreach(list, i, v)
		{
			char p[PATH_MAX_];
			if (rc)
				break;
			pathf(p, sizeof(p), "spec.arrivals[%zu]", i);
			rc = parse_arrival(t, v, p, &cap, diag);
		}
	}
	list = json_object_get(spec, "generators");
	if (!rc && list) {
		rc = want_array(list, SIM_GENERATORS_MAX, "spec.generators", diag);
		json_array_foreach(list, i, v)
		{
			char p[PATH_MAX_];
			if (rc)
				break;
			pathf(p, sizeof(p), "spec.generators[%zu]", i);
			t->gens[t->n_gens++].name = NULL;
			rc = parse_generator(t, v, p, &cap, diag);
		}
	}
	if (!rc && t->n_arrivals == 0)
		rc = gpuq_diag_set(diag, GPUQ_EINVAL,
				   "spec: no workloads (give arrivals or generators)");
	if (!rc)
		rc = check_names(t, diag);
	if (rc)
		return rc;
	if (t->arrivals)
		qsort(t->arrivals, t->n_arrivals, sizeof(*t->arrivals), arrival_cmp);
	return GPUQ_OK;
}

static uint64_t fnv1a(const char *buf, size_t len)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)buf[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static const char *trace_name_of(const json_t *doc)
{
	const char *n =
	    json_string_value(json_object_get(json_object_get(doc, "metadata"), "name"));
	return n ? n : "";
}

int sim_trace_parse(const char *name, const char *buf, size_t len, sim_trace_t **out,
		    gpuq_diag_t *diag)
{
	struct loader l = {.name = name};
	policy_opts_t popts = {.skip_unknown_kinds = true}; /* the Trace; on_doc checks kinds */
	struct vars vars = {.n = 0};
	size_t made = 0;
	sim_trace_t *t;
	int rc;

	*out = NULL;
	if (len > SIM_TRACE_BYTES_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT,
				     "%s: %zu bytes, more than the %u a trace file may have "
				     "(use generators and objectSets for big traces)",
				     name, len, SIM_TRACE_BYTES_MAX);
	t = calloc(1, sizeof(*t));
	if (!t)
		return GPUQ_ENOMEM;
	t->opt.gang_ready_delay_ms = 500;
	t->opt.gang_ready_timeout_ms = 30LL * 60 * 1000;
	t->opt.sample_interval_ms = 1000;
	t->hash = fnv1a(buf, len);
	t->path = strdup(name);
	t->gens = calloc(SIM_GENERATORS_MAX, sizeof(*t->gens));
	rc = t->path && t->gens ? policy_create(&popts, &l.policy) : GPUQ_ENOMEM;
	if (rc)
		goto fail;
	t->policy = l.policy;
	rc = policy_manifest_parse(name, buf, len, on_doc, &l, diag);
	if (!rc)
		rc = policy_add_manifest(t->policy, name, buf, len, diag);
	if (rc)
		goto fail;
	if (!l.trace) {
		rc = gpuq_diag_set(diag, GPUQ_EINVAL,
				   "%s: no Trace document (apiVersion: gpuq.dev/v1beta1, kind: "
				   "Trace)",
				   name);
		goto fail;
	}
	t->trace_doc = l.trace_doc;
	t->trace_name = strdup(trace_name_of(l.trace));
	if (!t->trace_name) {
		rc = GPUQ_ENOMEM;
		goto fail;
	}
	if (json_object_get(json_object_get(l.trace, "spec"), "objectSets")) {
		rc =
		    expand_sets(&l, json_object_get(json_object_get(l.trace, "spec"), "objectSets"),
				"spec.objectSets", &vars, &made, diag);
		if (rc)
			goto fail_trace;
	}
	rc = policy_finish(t->policy, diag);
	if (rc) {
		/* objects from object sets have no file: say where they came from */
		if (strncmp(diag->msg, name, strlen(name)) != 0)
			gpuq_diag_prefix(diag,
					 "%s: document %zu: Trace \"%s\": spec.objectSets: ", name,
					 l.trace_doc, trace_name_of(l.trace));
		goto fail;
	}
	t->n_lqs = policy_lq_count(t->policy);
	t->n_cqs = policy_cq_count(t->policy);
	rc = parse_options(t, json_object_get(json_object_get(l.trace, "spec"), "options"), diag);
	if (!rc)
		rc = parse_spec(t, l.trace, diag);
	if (rc)
		goto fail_trace;
	json_decref(l.trace);
	*out = t;
	return GPUQ_OK;
fail_trace:
	gpuq_diag_prefix(diag, "%s: document %zu: Trace \"%s\": ", name, l.trace_doc,
			 trace_name_of(l.trace));
fail:
	json_decref(l.trace);
	if (!t->policy)
		policy_unref(l.policy);
	sim_trace_destroy(t);
	return rc;
}

int sim_trace_load(const char *path, sim_trace_t **out, gpuq_diag_t *diag)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int rc = GPUQ_OK;

	*out = NULL;
	if (!f)
		return gpuq_diag_set(diag, GPUQ_EIO, "%s: %s", path, strerror(errno));
	for (;;) {
		size_t got;
		if (len == cap) {
			char *grown;
			if (cap > SIM_TRACE_BYTES_MAX) {
				rc = gpuq_diag_set(diag, GPUQ_ELIMIT,
						   "%s: more than the %u bytes a trace file may "
						   "have (use generators and objectSets for big "
						   "traces)",
						   path, SIM_TRACE_BYTES_MAX);
				break;
			}
			cap = cap ? cap * 2 : 65536;
			grown = realloc(buf, cap + 1);
			if (!grown) {
				rc = GPUQ_ENOMEM;
				break;
			}
			buf = grown;
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0) {
			if (ferror(f))
				rc = gpuq_diag_set(diag, GPUQ_EIO, "%s: read failed", path);
			break;
		}
	}
	fclose(f);
	if (!rc)
		rc = sim_trace_parse(path, buf ? buf : "", len, out, diag);
	free(buf);
	return rc;
}

static void shape_free(sim_shape_t *sh)
{
	for (size_t i = 0; i < sh->n_podsets; i++) {
		sim_podset_t *ps = &sh->podsets[i];
		for (size_t j = 0; j < ps->n_sel; j++) {
			free(ps->sel[j].key);
			free(ps->sel[j].value);
		}
		for (size_t j = 0; j < ps->n_tol; j++) {
			free(ps->tol[j].key);
			free(ps->tol[j].op);
			free(ps->tol[j].value);
			free(ps->tol[j].effect);
		}
		free(ps->sel);
		free(ps->tol);
		free(ps->name);
	}
	free(sh->podsets);
}

void sim_trace_destroy(sim_trace_t *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n_shapes; i++)
		shape_free(&t->shapes[i]);
	for (size_t i = 0; i < t->n_names; i++)
		free(t->names[i]);
	for (size_t i = 0; t->gens && i < t->n_gens; i++)
		free(t->gens[i].name);
	for (size_t i = 0; i < t->n_classes; i++)
		free(t->classes[i]);
	for (size_t i = 0; i < t->n_res; i++)
		free(t->res_names[i]);
	free(t->shapes);
	free(t->names);
	free(t->gens);
	free(t->classes);
	free(t->res_names);
	free(t->arrivals);
	free(t->opt.util_resource);
	free(t->trace_name);
	free(t->path);
	policy_unref(t->policy);
	free(t);
}

int sim_trace_workload_name(const sim_trace_t *t, size_t i, char *buf, size_t cap)
{
	const sim_arrival_t *a = &t->arrivals[i];
	int n;

	if (a->source == SIM_SOURCE_EXPLICIT)
		n = snprintf(buf, cap, "%s", t->names[a->seq]);
	else
		n = snprintf(buf, cap, "%s-%s-%" PRIu32, t->gens[a->source].name,
			     policy_lq_at(t->policy, a->lq)->name, a->seq);
	return n < 0 || (size_t)n >= cap ? GPUQ_ELIMIT : GPUQ_OK;
}

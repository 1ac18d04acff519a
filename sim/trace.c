/* sim/trace.c: reading a trace file into a policy snapshot and an arrival table. */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "engine/engine.h"
#include "policy/policy_json.h"
#include "quota/quota.h"
#include "sim/internal.h"
#include "workload/workload.h"

/* The trace goes through the policy module's manifest parser, which refuses
 * files over POLICY_FILE_MAX. */
_Static_assert(SIM_TRACE_BYTES_MAX <= POLICY_FILE_MAX, "trace cap above the manifest cap");

#define RES_MAX 64 /* distinct resource names in one trace */
#define VARS_MAX SIM_OBJECTSET_DEPTH

struct loader {
	const char *name; /* file name for messages */
	policy_t *policy; /* under construction */
	json_t *trace;	  /* deep copy of the Trace document */
	size_t trace_doc; /* its document number */
	sim_trace_t *t;	  /* the trace: kind: Node documents go into it */
};

/* ---- small helpers ---- */

/* Fields are read with the policy module's field decoder (policy_json.h):
 * each parse function below takes it with its path at the object it reads,
 * and leaves the path there. */

/* A name field (the Trace's names, classes, LocalQueue references): a
 * non-empty string of at most SIM_NAME_MAX - 1 bytes, borrowed from the
 * document; *out NULL when absent. */
static int name_field(policy_jdec_t *d, const json_t *obj, const char *key, bool required,
		      const char **out)
{
	int rc;

	*out = NULL;
	rc = policy_jdec_str(d, obj, key, required, SIM_NAME_MAX - 1, out);
	if (!rc && *out && !**out)
		rc = policy_jdec_fail_at(d, key, GPUQ_EINVAL, "must not be empty");
	return rc;
}

/* First pass over the documents: keep the Trace, refuse kinds that are
 * neither a Trace nor a policy object (the policy itself is loaded by
 * policy_add_manifest, which skips the Trace and remembers each object's file
 * and document for its messages). */
static int on_doc(void *ctx, size_t doc, const json_t *obj, gpuq_diag_t *diag)
{
	static const char *const policy_kinds[] = {
	    "Namespace", "LimitRange",	 "ResourceQuota", "PriorityClass", "ResourceFlavor",
	    "Topology",	 "ClusterQueue", "LocalQueue",	  "Cohort",	   "ResourceClaimTemplate",
	    NULL};
	struct loader *l = ctx;
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	const char *api = json_string_value(json_object_get(obj, "apiVersion"));

	if (kind && !strcmp(kind, "Node"))
		return sim_nodes_doc(l->t, obj, diag);
	if (!kind || strcmp(kind, "Trace") != 0) {
		for (size_t i = 0; kind && policy_kinds[i]; i++)
			if (!strcmp(kind, policy_kinds[i]))
				return GPUQ_OK;
		return gpuq_diag_set(
		    diag, GPUQ_EINVAL,
		    "kind \"%.100s\" (apiVersion \"%.100s\") is neither a Trace, a Node "
		    "nor a policy object",
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

static int expand_sets(struct loader *l, policy_jdec_t *d, const json_t *parent, struct vars *vars,
		       size_t *made);

/* One template, copied with its placeholders filled in, into the policy
 * (d's path at its objects[i], for messages). */
static int stamp(struct loader *l, policy_jdec_t *d, const json_t *tmpl, const struct vars *vars)
{
	json_t *obj = json_deep_copy(tmpl);
	int rc;

	if (!obj)
		return GPUQ_ENOMEM;
	rc = substitute_all(obj, vars);
	if (rc == GPUQ_ELIMIT)
		policy_jdec_fail(d, rc, "a string grows past %d bytes", POLICY_STRING_MAX);
	if (!rc) {
		rc = policy_add_json(l->policy, obj, d->diag);
		if (rc)
			gpuq_diag_prefix(d->diag, "%s (%s=%" PRId64 "): ", d->path,
					 vars->name[vars->n - 1], vars->value[vars->n - 1]);
	}
	json_decref(obj);
	return rc;
}

static int expand_one(struct loader *l, policy_jdec_t *d, const json_t *set, struct vars *vars,
		      size_t *made)
{
	static const char *const keys[] = {"count",   "index",	    "start",
					   "objects", "objectSets", NULL};
	const char *index = NULL;
	const json_t *objects = NULL;
	int64_t count = 0, start = 0;
	int rc = policy_jdec_keys(d, set, keys, NULL);

	if (!rc)
		rc = policy_jdec_int(d, set, "count", true, 1, SIM_OBJECTS_MAX, &count);
	if (!rc)
		rc = policy_jdec_int(d, set, "start", false, 0, 1000000000, &start);
	if (!rc)
		rc = name_field(d, set, "index", false, &index);
	if (rc)
		return rc;
	if (vars->n >= VARS_MAX)
		return policy_jdec_fail(d, GPUQ_ELIMIT, "object sets nest deeper than %d",
					VARS_MAX);
	rc = policy_jdec_arr(d, set, "objects", false, 1000, &objects);
	if (rc)
		return rc;
	vars->name[vars->n] = index ? index : "i";
	vars->n++;
	for (int64_t k = 0; k < count && !rc; k++) {
		vars->value[vars->n - 1] = start + k;
		for (size_t i = 0; i < json_array_size(objects) && !rc; i++) {
			size_t o1, o2;

			if (++*made > SIM_OBJECTS_MAX) {
				rc = policy_jdec_fail(d, GPUQ_ELIMIT,
						      "object sets make more than %d objects",
						      SIM_OBJECTS_MAX);
				break;
			}
			o1 = policy_jdec_key(d, "objects");
			o2 = policy_jdec_idx(d, i);
			rc = stamp(l, d, json_array_get(objects, i), vars);
			policy_jdec_pop(d, o2);
			policy_jdec_pop(d, o1);
		}
		if (!rc)
			rc = expand_sets(l, d, set, vars, made);
	}
	vars->n--;
	return rc;
}

/* parent's objectSets (none when absent). */
static int expand_sets(struct loader *l, policy_jdec_t *d, const json_t *parent, struct vars *vars,
		       size_t *made)
{
	const json_t *sets = NULL;
	size_t old;
	int rc = policy_jdec_arr(d, parent, "objectSets", false, 100, &sets);

	if (rc || !sets)
		return rc;
	old = policy_jdec_key(d, "objectSets");
	for (size_t i = 0; i < json_array_size(sets) && !rc; i++) {
		size_t o = policy_jdec_idx(d, i);

		rc = expand_one(l, d, json_array_get(sets, i), vars, made);
		policy_jdec_pop(d, o);
	}
	policy_jdec_pop(d, old);
	return rc;
}

/* spec.objectSets of the Trace, into the policy. */
static int expand_spec_sets(struct loader *l, policy_jdec_t *d)
{
	struct vars vars = {.n = 0};
	size_t made = 0, old = policy_jdec_key(d, "spec");
	int rc = expand_sets(l, d, json_object_get(l->trace, "spec"), &vars, &made);

	policy_jdec_pop(d, old);
	return rc;
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

int sim_trace_request(sim_trace_t *t, policy_jdec_t *d, const char *res, const json_t *v,
		      sim_req_t *r)
{
	char text[QUOTA_QTY_STR_MAX + 1];
	gpuq_diag_t why = {""};
	quota_qty_t q;
	int rc;

	if (json_is_integer(v))
		snprintf(text, sizeof(text), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_string(v) && json_string_length(v) <= QUOTA_QTY_STR_MAX)
		gpuq_strlcpy(text, json_string_value(v), sizeof(text));
	else
		return policy_jdec_want(d, v, "a quantity such as 1, \"2\" or \"500m\"");
	rc = quota_qty_parse(text, strlen(text), &q, &why);
	if (rc)
		return policy_jdec_fail(d, rc, "%s", why.msg);
	if (quota_core_per_unit(res) == 1 && !quota_qty_is_integer(&q))
		return policy_jdec_fail(d, GPUQ_EINVAL,
					"\"%s\" is not a whole number (only cpu may ask for a "
					"fraction)",
					text);
	r->amount = quota_qty_amount(res, &q);
	if (r->amount < 0)
		return policy_jdec_fail(d, GPUQ_EINVAL, "negative quantity \"%s\"", text);
	rc = intern(&t->res_names, &t->n_res, RES_MAX, res, &r->res);
	if (rc == GPUQ_ELIMIT)
		return policy_jdec_fail(d, rc, "more than %d distinct resources", RES_MAX);
	return rc;
}

/* obj's requests (d's path at requests). */
static int parse_requests(sim_trace_t *t, policy_jdec_t *d, const json_t *reqs, sim_podset_t *ps)
{
	const char *res;
	json_t *v;

	if (json_object_size(reqs) > SIM_POD_RES_MAX)
		return policy_jdec_fail(d, GPUQ_ELIMIT, "%zu resources, more than the %d allowed",
					json_object_size(reqs), SIM_POD_RES_MAX);
	json_object_foreach((json_t *)reqs, res, v)
	{
		size_t old;
		int rc;

		if (strlen(res) >= QUOTA_RES_NAME_MAX || !*res)
			return policy_jdec_fail(d, GPUQ_EINVAL, "bad resource name \"%s\"", res);
		old = policy_jdec_key(d, res);
		rc = sim_trace_request(t, d, res, v, &ps->req[ps->n_req]);
		policy_jdec_pop(d, old);
		if (rc)
			return rc;
		ps->n_req++;
	}
	return GPUQ_OK;
}

/* obj's nodeSelector (none when absent). */
static int parse_selector(policy_jdec_t *d, const json_t *obj, sim_podset_t *ps)
{
	const json_t *sel = NULL;
	const char *key;
	json_t *v;
	size_t old;
	int rc = policy_jdec_obj(d, obj, "nodeSelector", false, &sel);

	if (rc || !sel)
		return rc;
	if (json_object_size(sel) > SIM_SELECTOR_MAX)
		return policy_jdec_fail_at(d, "nodeSelector", GPUQ_ELIMIT,
					   "%zu entries, more than the %d allowed",
					   json_object_size(sel), SIM_SELECTOR_MAX);
	ps->sel = calloc(json_object_size(sel) + 1, sizeof(*ps->sel));
	if (!ps->sel)
		return GPUQ_ENOMEM;
	old = policy_jdec_key(d, "nodeSelector");
	json_object_foreach((json_t *)sel, key, v)
	{
		size_t o = policy_jdec_key(d, key);

		rc = json_is_string(v) ? GPUQ_OK : policy_jdec_want(d, v, "a string");
		policy_jdec_pop(d, o);
		if (rc)
			break;
		ps->sel[ps->n_sel].key = strdup(key);
		ps->sel[ps->n_sel].value = strdup(json_string_value(v));
		ps->n_sel++;
		if (!ps->sel[ps->n_sel - 1].key || !ps->sel[ps->n_sel - 1].value) {
			rc = GPUQ_ENOMEM;
			break;
		}
	}
	policy_jdec_pop(d, old);
	return rc;
}

static const char *const TOL_OPS[] = {"Equal", "Exists", NULL};

/* One tolerations entry (d's path at it). */
static int parse_toleration(policy_jdec_t *d, const json_t *tol, sim_toleration_t *out)
{
	static const char *const keys[] = {"key",    "operator",	  "value",
					   "effect", "tolerationSeconds", NULL};
	const char *key = "", *value = "";
	int op = 0, effect = 0;
	int rc = policy_jdec_keys(d, tol, keys, NULL);

	if (!rc)
		rc = policy_jdec_str(d, tol, "key", false, SIM_NAME_MAX - 1, &key);
	if (!rc)
		rc = policy_jdec_enum(d, tol, "operator", TOL_OPS, &op);
	if (!rc)
		rc = policy_jdec_str(d, tol, "value", false, SIM_NAME_MAX - 1, &value);
	if (!rc)
		rc = policy_jdec_enum(d, tol, "effect", POLICY_EFFECT_NAMES, &effect);
	if (rc)
		return rc;
	out->key = strdup(key);
	out->op = strdup(TOL_OPS[op]);
	out->value = strdup(value);
	out->effect = strdup(POLICY_EFFECT_NAMES[effect]);
	return out->key && out->op && out->value && out->effect ? GPUQ_OK : GPUQ_ENOMEM;
}

/* obj's tolerations (none when absent). */
static int parse_tolerations(policy_jdec_t *d, const json_t *obj, sim_podset_t *ps)
{
	const json_t *tols = NULL;
	size_t old;
	int rc = policy_jdec_arr(d, obj, "tolerations", false, SIM_TOLERATIONS_MAX, &tols);

	if (rc || !tols)
		return rc;
	ps->tol = calloc(json_array_size(tols) + 1, sizeof(*ps->tol));
	if (!ps->tol)
		return GPUQ_ENOMEM;
	old = policy_jdec_key(d, "tolerations");
	for (size_t i = 0; i < json_array_size(tols) && !rc; i++) {
		size_t o = policy_jdec_idx(d, i);

		rc = parse_toleration(d, json_array_get(tols, i), &ps->tol[ps->n_tol]);
		ps->n_tol++; /* freed by shape_free, also when half made */
		policy_jdec_pop(d, o);
	}
	policy_jdec_pop(d, old);
	return rc;
}

static int parse_podset(sim_trace_t *t, policy_jdec_t *d, const json_t *obj, sim_podset_t *ps)
{
	static const char *const keys[] = {"name",	  "count",    "requests", "nodeSelector",
					   "tolerations", "topology", NULL};
	const json_t *reqs = NULL;
	const char *name = NULL;
	int64_t count = 1;
	size_t old;
	int rc = policy_jdec_keys(d, obj, keys, NULL);

	if (!rc)
		rc = name_field(d, obj, "name", false, &name);
	if (!rc)
		rc = policy_jdec_int(d, obj, "count", false, 1, SIM_PODS_MAX, &count);
	if (!rc)
		rc = policy_jdec_obj(d, obj, "requests", true, &reqs);
	if (rc)
		return rc;
	ps->name = strdup(name ? name : "main");
	if (!ps->name)
		return GPUQ_ENOMEM;
	ps->count = (uint32_t)count;
	old = policy_jdec_key(d, "requests");
	rc = parse_requests(t, d, reqs, ps);
	for (size_t i = 0; !rc && i < ps->n_req; i++)
		if (ps->req[i].amount > QUEUE_AMOUNT_MAX / count)
			rc = policy_jdec_fail_at(d, t->res_names[ps->req[i].res], GPUQ_ERANGE,
						 "%" PRId64 " pods x %" PRId64
						 " is more than the %" PRId64
						 " one pod set may ask for",
						 count, ps->req[i].amount, QUEUE_AMOUNT_MAX);
	policy_jdec_pop(d, old);
	if (!rc)
		rc = parse_selector(d, obj, ps);
	if (!rc)
		rc = parse_tolerations(d, obj, ps);
	if (!rc)
		rc = sim_topology_parse(d, obj, ps);
	return rc;
}

/* maxExecTime (a duration of whole seconds, as the label counts them):
 * the workload's own wall-clock limit into *out, 0 when absent. */
static int max_exec(policy_jdec_t *d, const json_t *obj, int32_t *out)
{
	int64_t ms = 0;
	int rc = policy_jdec_duration(d, obj, "maxExecTime", false, &ms);

	*out = 0;
	if (rc || !json_object_get(obj, "maxExecTime"))
		return rc;
	if (ms < 1000 || ms % 1000 || ms / 1000 > INT32_MAX)
		return policy_jdec_fail_at(d, "maxExecTime", GPUQ_EINVAL,
					   "must be whole seconds, at least 1s (the label "
					   "max-exec-time-seconds counts seconds)");
	*out = (int32_t)(ms / 1000);
	return GPUQ_OK;
}

/* Parse podSets, gang and readyDelay of obj into a new shape; *out its index. */
static int parse_shape(sim_trace_t *t, policy_jdec_t *d, const json_t *obj, uint32_t *out)
{
	const json_t *sets = NULL;
	sim_shape_t *sh, *grown;
	size_t old;
	int rc = policy_jdec_arr(d, obj, "podSets", true, SIM_PODSETS_MAX, &sets);

	if (rc)
		return rc;
	if (json_array_size(sets) == 0)
		return policy_jdec_fail_at(d, "podSets", GPUQ_EINVAL, "needs at least one pod set");
	grown = realloc(t->shapes, (t->n_shapes + 1) * sizeof(*t->shapes));
	if (!grown)
		return GPUQ_ENOMEM;
	t->shapes = grown;
	sh = &t->shapes[t->n_shapes];
	memset(sh, 0, sizeof(*sh));
	sh->ready_delay_ms = -1;
	sh->idle_after_ms = sh->expected_ms = -1;
	t->n_shapes++;
	sh->podsets = calloc(json_array_size(sets), sizeof(*sh->podsets));
	if (!sh->podsets)
		return GPUQ_ENOMEM;
	old = policy_jdec_key(d, "podSets");
	for (size_t i = 0; i < json_array_size(sets) && !rc; i++) {
		size_t o = policy_jdec_idx(d, i);

		sh->n_podsets++;
		rc = parse_podset(t, d, json_array_get(sets, i), &sh->podsets[i]);
		for (size_t j = 0; j < i && !rc; j++)
			if (!strcmp(sh->podsets[j].name, sh->podsets[i].name))
				rc = policy_jdec_fail_at(d, "name", GPUQ_EINVAL,
							 "duplicate pod set name \"%s\"",
							 sh->podsets[i].name);
		policy_jdec_pop(d, o);
	}
	policy_jdec_pop(d, old);
	if (!rc)
		rc = sim_topology_groups(d, sh);
	if (!rc)
		rc = policy_jdec_bool(d, obj, "gang", &sh->gang);
	if (!rc)
		rc = policy_jdec_duration(d, obj, "readyDelay", false, &sh->ready_delay_ms);
	if (!rc)
		rc = policy_jdec_duration(d, obj, "idleAfter", false, &sh->idle_after_ms);
	if (!rc)
		rc = policy_jdec_duration(d, obj, "expectedRuntime", false, &sh->expected_ms);
	if (!rc && json_object_get(obj, "expectedRuntime") && sh->expected_ms < 1)
		rc = policy_jdec_fail_at(d, "expectedRuntime", GPUQ_EINVAL, "must be at least 1ms");
	if (!rc)
		rc = max_exec(d, obj, &sh->max_exec_s);
	*out = (uint32_t)(t->n_shapes - 1);
	return rc;
}

/* ---- priorities, classes, queues ---- */

static int resolve_priority(const sim_trace_t *t, policy_jdec_t *d, const json_t *obj, int32_t *out)
{
	const char *pc = NULL;
	const json_t *given = NULL;
	int64_t value = 0;
	const policy_priorityclass_t *def = policy_priorityclass_default(t->policy);
	int rc = name_field(d, obj, "priorityClass", false, &pc);

	if (!rc)
		rc = policy_jdec_member(d, obj, "priority", false, &given);
	if (!rc)
		rc =
		    policy_jdec_int(d, obj, "priority", false, -2147483647 - 1, 1000000000, &value);
	if (rc)
		return rc;
	if (pc && given)
		return policy_jdec_fail(d, GPUQ_EINVAL, "give priorityClass or priority, not both");
	if (pc) {
		const policy_priorityclass_t *c = policy_priorityclass_find(t->policy, pc);
		if (!c)
			return policy_jdec_fail_at(d, "priorityClass", GPUQ_ENOTFOUND,
						   "no PriorityClass \"%s\"", pc);
		*out = c->value;
	} else if (given) {
		*out = (int32_t)value;
	} else {
		*out = def ? def->value : 0;
	}
	return GPUQ_OK;
}

static int resolve_class(sim_trace_t *t, policy_jdec_t *d, const json_t *obj, uint16_t *out)
{
	const char *name = NULL;
	int rc = name_field(d, obj, "class", false, &name);

	if (rc)
		return rc;
	rc = intern(&t->classes, &t->n_classes, SIM_CLASSES_MAX, name ? name : "", out);
	if (rc == GPUQ_ELIMIT)
		return policy_jdec_fail_at(d, "class", rc, "more than %d classes",
					   SIM_CLASSES_MAX - 1);
	return rc;
}

/* The LocalQueue "namespace/name" ref names (d's path at the field). */
static int find_lq(const sim_trace_t *t, policy_jdec_t *d, const char *ref, uint32_t *out)
{
	char ns[SIM_NAME_MAX];
	const char *slash = ref ? strchr(ref, '/') : NULL;
	const policy_lq_t *lq;

	if (!ref || !slash || slash == ref || !slash[1] || (size_t)(slash - ref) >= sizeof(ns))
		return policy_jdec_fail(d, GPUQ_EINVAL, "\"%s\" is not \"namespace/name\"",
					ref ? ref : "");
	memcpy(ns, ref, (size_t)(slash - ref));
	ns[slash - ref] = '\0';
	lq = policy_lq_find(t->policy, ns, slash + 1);
	if (!lq)
		return policy_jdec_fail(d, GPUQ_ENOTFOUND, "no LocalQueue \"%s\"", ref);
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

static const char *const workload_keys[] = {
    "at",	  "name",      "localQueue",	  "priorityClass", "priority",
    "class",	  "podSets",   "object",	  "runtime",	   "gang",
    "readyDelay", "idleAfter", "expectedRuntime", "maxExecTime",   NULL};

/* A decoded pod set's topology request as a podSets entry's topology
 * (sim/topology.c reads it back). A new reference, or NULL (no memory). */
static json_t *topology_entry(const workload_topology_t *tp)
{
	json_t *o = json_object();

	if (o && tp->mode == WORKLOAD_TOPO_REQUIRED)
		json_object_set_new(o, "required", json_string(tp->level));
	if (o && tp->mode == WORKLOAD_TOPO_PREFERRED)
		json_object_set_new(o, "preferred", json_string(tp->level));
	if (o && tp->mode == WORKLOAD_TOPO_UNCONSTRAINED)
		json_object_set_new(o, "unconstrained", json_true());
	if (o && tp->slice_level) {
		json_object_set_new(o, "sliceRequired", json_string(tp->slice_level));
		json_object_set_new(o, "sliceSize", json_integer(tp->slice_size));
	}
	if (o && tp->group)
		json_object_set_new(o, "group", json_string(tp->group));
	return o;
}

/* One decoded pod set as the podSets entry a trace writes: name, count,
 * per-pod requests, nodeSelector, tolerations, topology (its template's
 * annotations, read by workload/). A new reference. */
static json_t *podset_entry(const workload_t *w, const workload_podset_t *ps)
{
	json_t *e;

	json_t *reqs = json_object(), *sel = json_object(), *tols = json_array();
	char q[64];

	for (size_t i = 0; reqs && i < ps->n_requests; i++)
		if (quota_qty_format(&ps->requests[i].qty, q, sizeof(q)) == GPUQ_OK)
			json_object_set_new(reqs, ps->requests[i].name, json_string(q));
	for (size_t i = 0; sel && i < ps->n_node_selector; i++)
		json_object_set_new(sel, ps->node_selector[i].key,
				    json_string(ps->node_selector[i].value));
	for (size_t i = 0; tols && i < ps->n_tolerations; i++) {
		const workload_toleration_t *tl = &ps->tolerations[i];

		json_array_append_new(tols, json_pack("{s:s, s:s, s:s, s:s}", "key",
						      tl->key ? tl->key : "", "operator",
						      tl->op ? tl->op : "Equal", "value",
						      tl->value ? tl->value : "", "effect",
						      tl->effect ? tl->effect : ""));
	}
	e = json_pack("{s:s, s:I, s:o, s:o, s:o}", "name", ps->name, "count",
		      (json_int_t)(w->n_podsets == 1 ? w->pods : ps->count), "requests", reqs,
		      "nodeSelector", sel, "tolerations", tols);
	if (e && ps->topology && json_object_set_new(e, "topology", topology_entry(ps->topology))) {
		json_decref(e);
		return NULL;
	}
	return e;
}

/* A workload given as the object a tenant submits ("object": a Job, a
 * JobSet, a RayJob, a StatefulSet...): read by the workload model, as the
 * controller reads it, into the podSets (and gang: more than one pod) it
 * is admitted by; its name "kind/name" when the trace gives none. A new
 * object (podSets, gang) into *out. */
static int object_shape(sim_trace_t *t, policy_jdec_t *d, const json_t *obj, json_t **out,
			char *name, size_t cap)
{
	json_t *own = json_is_object(obj) ? json_deep_copy(obj) : NULL, *meta;
	workload_t *w = NULL;
	gpuq_diag_t wd = {{0}};
	json_t *sets;
	char *text;
	int rc;

	if (!json_is_object(obj))
		return policy_jdec_want(d, obj, "an object (a Job, a JobSet, ...)");
	/* what the apiserver gives a stored object, when the trace leaves it out */
	meta = own ? json_object_get(own, "metadata") : NULL;
	if (json_is_object(meta)) {
		static const char *const keys[] = {"uid", "creationTimestamp", "resourceVersion",
						   "namespace"};
		static const char *const vals[] = {"sim", "1970-01-01T00:00:00Z", "1", "default"};

		for (size_t i = 0; i < 4; i++)
			if (!json_object_get(meta, keys[i]))
				json_object_set_new(meta, keys[i], json_string(vals[i]));
	}
	text = own ? json_dumps(own, JSON_COMPACT) : NULL;
	json_decref(own);
	if (!text)
		return GPUQ_ENOMEM;
	rc = workload_decode_json(text, strlen(text), NULL, &w, &wd);
	free(text);
	if (!rc)
		rc = workload_resolve(w, t->policy, &wd);
	if (!rc && (w->kind == WORKLOAD_KIND_POD || w->n_podsets == 0 || w->pods < 1))
		rc = gpuq_diag_set(&wd, GPUQ_EINVAL, "%s \"%s\" has no pod set gpuq would admit",
				   w->integ->kind_name, w->name);
	if (rc) {
		workload_destroy(w);
		return policy_jdec_fail_at(d, "object", rc, "%s", wd.msg);
	}
	sets = json_array();
	for (size_t i = 0; sets && i < w->n_podsets; i++)
		json_array_append_new(sets, podset_entry(w, &w->podsets[i]));
	*out = json_pack("{s:o, s:b}", "podSets", sets, "gang", w->pods > 1);
	if (*out && w->x->max_exec_s > 0) /* its label: the limit it carries */
		json_object_set_new(*out, "maxExecTime",
				    json_sprintf("%" PRId32 "s", w->x->max_exec_s));
	workload_display_name(w->kind, w->name, name, cap);
	workload_destroy(w);
	return *out ? GPUQ_OK : GPUQ_ENOMEM;
}

static int parse_arrival(sim_trace_t *t, policy_jdec_t *d, const json_t *obj, size_t *cap)
{
	sim_arrival_t a;
	const char *name = NULL, *lq = NULL;
	char oname[QUEUE_NAME_MAX + 1];
	char **grown;
	int rc;

	memset(&a, 0, sizeof(a));
	rc = policy_jdec_keys(d, obj, workload_keys, NULL);
	if (!rc)
		rc = policy_jdec_duration(d, obj, "at", true, &a.at_ms);
	if (!rc)
		rc = name_field(d, obj, "name", !json_object_get(obj, "object"), &name);
	if (!rc)
		rc = name_field(d, obj, "localQueue", true, &lq);
	if (!rc) {
		size_t old = policy_jdec_key(d, "localQueue");

		rc = find_lq(t, d, lq, &a.lq);
		policy_jdec_pop(d, old);
	}
	if (!rc)
		rc = policy_jdec_duration(d, obj, "runtime", true, &a.runtime_ms);
	if (!rc && a.runtime_ms < 1)
		rc = policy_jdec_fail_at(d, "runtime", GPUQ_EINVAL, "must be at least 1ms");
	if (!rc)
		rc = resolve_priority(t, d, obj, &a.priority);
	if (!rc)
		rc = resolve_class(t, d, obj, &a.class_id);
	if (!rc && json_object_get(obj, "object")) {
		json_t *shape = NULL;

		if (json_object_get(obj, "podSets"))
			return policy_jdec_fail_at(d, "object", GPUQ_EINVAL,
						   "give podSets or object, not both");
		rc = object_shape(t, d, json_object_get(obj, "object"), &shape, oname,
				  sizeof(oname));
		if (!rc) {
			size_t old = policy_jdec_key(d, "object");

			rc = parse_shape(t, d, shape, &a.shape);
			policy_jdec_pop(d, old);
		}
		json_decref(shape);
		if (!name)
			name = oname;
	} else if (!rc) {
		rc = parse_shape(t, d, obj, &a.shape);
	}
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

/* localQueues: every entry a LocalQueue reference, into out[*n]. */
static int listed_lqs(const sim_trace_t *t, policy_jdec_t *d, const json_t *list, uint32_t *out,
		      size_t *n)
{
	size_t old = policy_jdec_key(d, "localQueues");
	int rc = GPUQ_OK;

	for (size_t i = 0; i < json_array_size(list) && !rc; i++) {
		const json_t *v = json_array_get(list, i);
		size_t o = policy_jdec_idx(d, i);

		rc = json_is_string(v) ? find_lq(t, d, json_string_value(v), &out[*n])
				       : policy_jdec_want(d, v, "a string");
		if (!rc)
			(*n)++;
		policy_jdec_pop(d, o);
	}
	policy_jdec_pop(d, old);
	return rc;
}

/* The LocalQueues a generator feeds: localQueues (a list) or localQueuePattern (a
 * glob over "namespace/name"). */
static int generator_lqs(sim_trace_t *t, policy_jdec_t *d, const json_t *obj, uint32_t **out,
			 size_t *n)
{
	const json_t *list = NULL;
	const char *pattern = NULL;
	int rc = name_field(d, obj, "localQueuePattern", false, &pattern);

	if (!rc)
		rc = policy_jdec_arr(d, obj, "localQueues", false, t->n_lqs, &list);
	if (rc)
		return rc;
	if (!!list == !!pattern)
		return policy_jdec_fail(d, GPUQ_EINVAL,
					"give exactly one of localQueues and localQueuePattern");
	*out = calloc(t->n_lqs + 1, sizeof(**out));
	if (!*out)
		return GPUQ_ENOMEM;
	*n = 0;
	if (list)
		return listed_lqs(t, d, list, *out, n);
	for (size_t i = 0; i < t->n_lqs; i++) {
		const policy_lq_t *lq = policy_lq_at(t->policy, i);
		char ref[2 * SIM_NAME_MAX + 2];
		snprintf(ref, sizeof(ref), "%s/%s", lq->namespace_, lq->name);
		if (!fnmatch(pattern, ref, 0))
			(*out)[(*n)++] = (uint32_t)i;
	}
	if (*n == 0)
		return policy_jdec_fail_at(d, "localQueuePattern", GPUQ_ENOTFOUND,
					   "\"%s\" matches no LocalQueue", pattern);
	return GPUQ_OK;
}

/* A generator's template: podSets, gang and readyDelay into a shape. */
static int parse_template(sim_trace_t *t, policy_jdec_t *d, const json_t *obj, uint32_t *shape)
{
	static const char *const keys[] = {
	    "podSets", "gang", "readyDelay", "idleAfter", "expectedRuntime", "maxExecTime", NULL};
	const json_t *tmpl = NULL;
	size_t old;
	int rc = policy_jdec_obj(d, obj, "template", true, &tmpl);

	if (rc)
		return rc;
	old = policy_jdec_key(d, "template");
	rc = policy_jdec_keys(d, tmpl, keys, NULL);
	if (!rc)
		rc = parse_shape(t, d, tmpl, shape);
	policy_jdec_pop(d, old);
	return rc;
}

/* When a generator's workloads arrive. */
struct gen_times {
	int64_t count; /* workloads per LocalQueue */
	int64_t every; /* ms between two of them */
	int64_t start; /* ms of the first; -1: one interval in */
};

/* A generator's name (unique), count, every, start and runtime. */
static int generator_timing(const sim_trace_t *t, policy_jdec_t *d, const json_t *obj,
			    const char **name, struct gen_times *tm, int64_t *runtime)
{
	int rc = name_field(d, obj, "name", true, name);

	for (size_t i = 0; !rc && *name && i + 1 < t->n_gens; i++)
		if (!strcmp(t->gens[i].name, *name))
			rc = policy_jdec_fail_at(d, "name", GPUQ_EEXIST,
						 "duplicate generator name \"%s\"", *name);
	if (!rc)
		rc = policy_jdec_int(d, obj, "count", true, 1, SIM_WORKLOADS_MAX, &tm->count);
	if (!rc)
		rc = policy_jdec_duration(d, obj, "every", tm->count > 1, &tm->every);
	if (!rc && tm->count > 1 && tm->every == 0)
		rc = policy_jdec_fail_at(d, "every", GPUQ_EINVAL, "must be above 0");
	if (!rc)
		rc = policy_jdec_duration(d, obj, "start", false, &tm->start);
	if (!rc)
		rc = policy_jdec_duration(d, obj, "runtime", true, runtime);
	if (!rc && *runtime < 1)
		rc = policy_jdec_fail_at(d, "runtime", GPUQ_EINVAL, "must be at least 1ms");
	return rc;
}

static int parse_generator(sim_trace_t *t, policy_jdec_t *d, const json_t *obj, size_t *cap)
{
	static const char *const keys[] = {
	    "name",  "localQueues",   "localQueuePattern", "start",   "every",	  "count",
	    "class", "priorityClass", "priority",	   "runtime", "template", NULL};
	sim_arrival_t a;
	const char *name = NULL;
	struct gen_times tm = {.count = 0, .every = 0, .start = -1};
	uint32_t *lqs = NULL;
	size_t n_lqs = 0;
	sim_generator_t *g;
	int rc;

	memset(&a, 0, sizeof(a));
	t->gens[t->n_gens++].name = NULL; /* its slot, for the duplicate check */
	rc = policy_jdec_keys(d, obj, keys, NULL);
	if (!rc)
		rc = generator_timing(t, d, obj, &name, &tm, &a.runtime_ms);
	if (!rc)
		rc = resolve_priority(t, d, obj, &a.priority);
	if (!rc)
		rc = resolve_class(t, d, obj, &a.class_id);
	if (!rc)
		rc = parse_template(t, d, obj, &a.shape);
	if (!rc)
		rc = generator_lqs(t, d, obj, &lqs, &n_lqs);
	if (!rc && (uint64_t)tm.count * n_lqs + t->n_arrivals > SIM_WORKLOADS_MAX)
		rc = policy_jdec_fail(d, GPUQ_ELIMIT, "the trace would hold more than %d workloads",
				      SIM_WORKLOADS_MAX);
	if (!rc && tm.start + (tm.every * (tm.count - 1)) > SIM_TIME_MAX_MS)
		rc = policy_jdec_fail(d, GPUQ_ERANGE, "arrivals run past 10 years");
	if (rc) {
		free(lqs);
		return rc;
	}
	if (tm.start < 0)
		tm.start = tm.every; /* Kueue's generator waits one interval before each creation */
	g = &t->gens[t->n_gens - 1];
	g->name = strdup(name ? name : "");
	g->n_lqs = (uint32_t)n_lqs;
	a.source = (uint32_t)(t->n_gens - 1);
	for (size_t q = 0; q < n_lqs && !rc; q++) {
		a.lq = lqs[q];
		for (int64_t k = 0; k < tm.count && !rc; k++) {
			a.at_ms = tm.start + k * tm.every;
			a.seq = (uint32_t)k;
			rc = push_arrival(t, cap, &a);
		}
	}
	free(lqs);
	return g->name ? rc : GPUQ_ENOMEM;
}

/* fairShareHalfLife or fairShareSamplingInterval: absent leaves *ms 0 (the
 * core's default); given, at least 1ms (Kueue's half-life 0, no usage
 * history, is not supported). */
static int usage_duration(policy_jdec_t *d, const json_t *obj, const char *key, int64_t *ms)
{
	int rc = policy_jdec_duration(d, obj, key, false, ms);

	if (rc == GPUQ_OK && json_object_get(obj, key) && *ms < 1)
		rc = policy_jdec_fail_at(d, key, GPUQ_EINVAL, "must be at least 1ms");
	return rc;
}

/* options.prediction: {interval, runtimes: Declared | History}. */
static int parse_prediction(policy_jdec_t *d, const json_t *opts, sim_options_t *o)
{
	static const char *const keys[] = {"interval", "runtimes", NULL};
	static const char *const sources[] = {"Declared", "History", NULL};
	const json_t *obj = NULL;
	int src = 0;
	size_t old;
	int rc = policy_jdec_obj(d, opts, "prediction", false, &obj);

	if (rc || !obj)
		return rc;
	old = policy_jdec_key(d, "prediction");
	rc = policy_jdec_keys(d, obj, keys, NULL);
	if (!rc)
		rc = policy_jdec_duration(d, obj, "interval", true, &o->predict_interval_ms);
	if (!rc && o->predict_interval_ms < 1)
		rc = policy_jdec_fail_at(d, "interval", GPUQ_EINVAL, "must be at least 1ms");
	if (!rc)
		rc = policy_jdec_enum(d, obj, "runtimes", sources, &src);
	o->predict_history = src == 1;
	policy_jdec_pop(d, old);
	return rc;
}

/* spec.options (d's path at spec); defaults when absent. */
static int parse_options(sim_trace_t *t, policy_jdec_t *d, const json_t *spec)
{
	static const char *const keys[] = {"cycleInterval",
					   "fairShareHalfLife",
					   "fairShareSamplingInterval",
					   "gangReadyDelay",
					   "gangReadyTimeout",
					   "sampleInterval",
					   "utilizationResource",
					   "fairSharing",
					   "budgetInterval",
					   "prediction",
					   NULL};
	const json_t *obj = NULL;
	const char *res = NULL;
	sim_options_t *o = &t->opt;
	int rc = policy_jdec_obj(d, spec, "options", false, &obj);

	if (!rc && obj) {
		size_t old = policy_jdec_key(d, "options");

		rc = policy_jdec_keys(d, obj, keys, NULL);
		if (!rc)
			rc = policy_jdec_duration(d, obj, "cycleInterval", false,
						  &o->cycle_interval_ms);
		if (!rc)
			rc = usage_duration(d, obj, "fairShareHalfLife", &o->half_life_ms);
		if (!rc)
			rc = usage_duration(d, obj, "fairShareSamplingInterval",
					    &o->usage_sample_ms);
		if (!rc)
			rc = policy_jdec_duration(d, obj, "gangReadyDelay", false,
						  &o->gang_ready_delay_ms);
		if (!rc)
			rc = policy_jdec_duration(d, obj, "gangReadyTimeout", false,
						  &o->gang_ready_timeout_ms);
		if (!rc)
			rc = policy_jdec_duration(d, obj, "sampleInterval", false,
						  &o->sample_interval_ms);
		if (!rc)
			rc = name_field(d, obj, "utilizationResource", false, &res);
		if (!rc)
			rc = policy_jdec_bool(d, obj, "fairSharing", &o->fair_sharing);
		if (!rc && o->sample_interval_ms < 1)
			rc = policy_jdec_fail_at(d, "sampleInterval", GPUQ_EINVAL,
						 "must be at least 1ms");
		if (!rc)
			rc = usage_duration(d, obj, "budgetInterval", &o->budget_interval_ms);
		if (!rc)
			rc = parse_prediction(d, obj, o);
		policy_jdec_pop(d, old);
	}
	if (rc)
		return rc;
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

/* spec's list at key (none when absent): each entry through parse. */
static int parse_list(sim_trace_t *t, policy_jdec_t *d, const json_t *spec, const char *key,
		      size_t max, size_t *cap,
		      int (*parse)(sim_trace_t *t, policy_jdec_t *d, const json_t *obj,
				   size_t *cap))
{
	const json_t *list = NULL;
	size_t old;
	int rc = policy_jdec_arr(d, spec, key, false, max, &list);

	if (rc || !list)
		return rc;
	old = policy_jdec_key(d, key);
	for (size_t i = 0; i < json_array_size(list) && !rc; i++) {
		size_t o = policy_jdec_idx(d, i);

		rc = parse(t, d, json_array_get(list, i), cap);
		policy_jdec_pop(d, o);
	}
	policy_jdec_pop(d, old);
	return rc;
}

static int parse_spec(sim_trace_t *t, policy_jdec_t *d, const json_t *doc)
{
	static const char *const top_keys[] = {"apiVersion", "kind", "metadata", "spec", NULL};
	static const char *const spec_keys[] = {"options",    "objectSets", "arrivals",
						"generators", "nodeGroups", NULL};
	const json_t *spec = NULL;
	size_t cap = 0, old;
	int rc;

	rc = policy_jdec_keys(d, doc, top_keys, NULL);
	if (!rc)
		rc = policy_jdec_obj(d, doc, "spec", true, &spec);
	if (rc)
		return rc;
	old = policy_jdec_key(d, "spec");
	rc = policy_jdec_keys(d, spec, spec_keys, NULL);
	if (!rc)
		rc = parse_list(t, d, spec, "arrivals", SIM_ARRIVALS_MAX, &cap, parse_arrival);
	if (!rc)
		rc =
		    parse_list(t, d, spec, "generators", SIM_GENERATORS_MAX, &cap, parse_generator);
	if (!rc && t->n_arrivals == 0)
		rc = policy_jdec_fail(d, GPUQ_EINVAL, "no workloads (give arrivals or generators)");
	policy_jdec_pop(d, old);
	if (!rc)
		rc = sim_nodes_groups(t, spec, d->diag);
	if (!rc)
		rc = sim_nodes_check(t, d->diag);
	if (!rc)
		rc = check_names(t, d->diag);
	if (rc)
		return rc;
	if (t->arrivals)
		qsort(t->arrivals, t->n_arrivals, sizeof(*t->arrivals), arrival_cmp);
	return GPUQ_OK;
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
	policy_jdec_t d; /* the Trace's fields; messages start at the path */
	size_t old;
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
	t->hash = gpuq_fnv1a(GPUQ_FNV1A_SEED, buf, len); /* kept in state dirs */
	t->path = strdup(name);
	t->gens = calloc(SIM_GENERATORS_MAX, sizeof(*t->gens));
	rc = t->path && t->gens ? policy_create(&popts, &l.policy) : GPUQ_ENOMEM;
	if (rc)
		goto fail;
	t->policy = l.policy;
	l.t = t;
	rc = manifest_parse(name, buf, len, on_doc, &l, diag);
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
	policy_jdec_init(&d, diag, NULL);
	rc = expand_spec_sets(&l, &d);
	if (rc)
		goto fail_trace;
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
	old = policy_jdec_key(&d, "spec");
	rc = parse_options(t, &d, json_object_get(l.trace, "spec"));
	policy_jdec_pop(&d, old);
	if (!rc)
		rc = parse_spec(t, &d, l.trace);
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
		sim_topology_free(&ps->topology);
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
	sim_nodes_free(t);
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

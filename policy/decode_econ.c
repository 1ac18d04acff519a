/*
 * Decoding gpuq's own economics fields (docs/economics.md): spec.budget of a
 * ClusterQueue or LocalQueue, spec.minRuntime and spec.idleReclaim of a
 * ClusterQueue, the gpuq.dev/min-runtime annotation of a PriorityClass, and
 * the cross-object rule (one Namespace budget per namespace). They are
 * fields of gpuq.dev/v1beta1 only: a kueue.x-k8s.io object carrying one is
 * refused, naming the field and the apiVersion that has it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"

#define API_GPUQ "gpuq.dev/v1beta1"
#define DECIMAL_MAX 32 /* bytes in a budget's limit written as a string */
#define IDLE_BELOW_DEFAULT 10.0
#define IDLE_FOR_MIN_MS 1000

/* A gpuq field under another apiVersion: refused, saying where it lives. */
static int gpuq_only(policy_dec_t *d, const json_t *spec, const char *key)
{
	const json_t *v = json_object_get(spec, key);

	if (!v || json_is_null(v) || !strcmp(d->api, API_GPUQ))
		return GPUQ_OK;
	return policy_jdec_fail_at(&d->j, key, GPUQ_EINVAL,
				   "a field of %s only (%s has no such field); write the object "
				   "as apiVersion %s",
				   API_GPUQ, d->api, API_GPUQ);
}

/* A non-negative decimal: a number, or a plain decimal string ("2500.50"). */
static int decimal(policy_dec_t *d, const json_t *obj, const char *key, double max, double *out)
{
	const json_t *v = json_object_get(obj, key);
	size_t old = policy_jdec_key(&d->j, key);
	int rc = GPUQ_OK;
	double x = 0;

	if (json_is_number(v)) {
		x = json_number_value(v);
	} else if (json_is_string(v)) {
		const char *s = json_string_value(v);
		size_t n = strlen(s), dots = 0, digits = 0;
		char *end;

		for (size_t i = 0; i < n; i++) {
			dots += s[i] == '.';
			digits += s[i] >= '0' && s[i] <= '9';
		}
		x = n && n <= DECIMAL_MAX && dots <= 1 && digits && digits + dots == n
			? strtod(s, &end)
			: -1;
		if (x < 0)
			rc = policy_jdec_fail(&d->j, GPUQ_EINVAL,
					      "\"%.40s\" is not a decimal number (want e.g. "
					      "\"2500\" or 120.5)",
					      s);
	} else {
		rc = policy_jdec_want(&d->j, v, "a number or a decimal string");
	}
	if (!rc && !(x >= 0 && x <= max && isfinite(x)))
		rc = policy_jdec_fail(&d->j, GPUQ_ERANGE, "%g is outside 0..%g", x, max);
	policy_jdec_pop(&d->j, old);
	*out = x;
	return rc;
}

/* window: "Month" or "<N>d". */
static int window(policy_dec_t *d, const json_t *b, int32_t *days)
{
	const char *w = NULL;
	size_t old;
	int rc = policy_jdec_str(&d->j, b, "window", false, 16, &w);
	char *end;
	long n;

	*days = 0;
	if (rc || !w || !strcmp(w, "Month"))
		return rc;
	n = strtol(w, &end, 10);
	if (end != w && !strcmp(end, "d") && w[0] != '+' && w[0] != '-' && n >= 1 &&
	    n <= POLICY_BUDGET_DAYS_MAX) {
		*days = (int32_t)n;
		return GPUQ_OK;
	}
	old = policy_jdec_key(&d->j, "window");
	rc = policy_jdec_fail(&d->j, GPUQ_EINVAL,
			      "\"%s\": want Month or a number of days, 1d..%dd (e.g. \"30d\")", w,
			      POLICY_BUDGET_DAYS_MAX);
	policy_jdec_pop(&d->j, old);
	return rc;
}

/* spec.budget. is_lq: a LocalQueue's (scope allowed). */
int policy_dec_budget(policy_dec_t *d, const json_t *spec, bool is_lq, policy_budget_t *out)
{
	static const char *const keys[] = {"gpuHours", "cost",	"window", "warnAt",
					   "action",   "scope", NULL};
	static const char *const actions[] = {"Warn", "Lower", "Hold", NULL};
	static const char *const scopes[] = {"LocalQueue", "Namespace", NULL};
	const json_t *b = NULL;
	int64_t warn = 80;
	int action = 0, scope = 0;
	size_t old;
	int rc = gpuq_only(d, spec, "budget");

	memset(out, 0, sizeof(*out));
	if (!rc)
		rc = policy_jdec_obj(&d->j, spec, "budget", false, &b);
	if (rc || !b)
		return rc;
	old = policy_jdec_key(&d->j, "budget");
	rc = policy_jdec_keys(&d->j, b, keys, NULL);
	out->cost = json_object_get(b, "cost") != NULL;
	if (!rc && out->cost == (json_object_get(b, "gpuHours") != NULL))
		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "give exactly one of gpuHours and cost");
	if (!rc)
		rc = decimal(d, b, out->cost ? "cost" : "gpuHours", POLICY_BUDGET_LIMIT_MAX,
			     &out->limit);
	if (!rc)
		rc = window(d, b, &out->window_days);
	if (!rc)
		rc = policy_jdec_int(&d->j, b, "warnAt", false, 1, 100, &warn);
	if (!rc)
		rc = policy_jdec_enum(&d->j, b, "action", actions, &action);
	if (!rc && !is_lq && json_object_get(b, "scope"))
		rc = policy_jdec_fail_at(&d->j, "scope", GPUQ_EINVAL,
					 "a LocalQueue's budget only (a ClusterQueue's covers "
					 "the ClusterQueue)");
	if (!rc)
		rc = policy_jdec_enum(&d->j, b, "scope", scopes, &scope);
	policy_jdec_pop(&d->j, old);
	out->present = rc == GPUQ_OK;
	out->warn_pct = (int32_t)warn;
	out->action = (policy_budget_action_t)action;
	out->namespace_scope = scope == 1;
	return rc;
}

/* spec.minRuntime. */
int policy_dec_min_runtime(policy_dec_t *d, const json_t *spec, int64_t *out)
{
	int rc = gpuq_only(d, spec, "minRuntime");

	*out = 0;
	if (!rc)
		rc = policy_jdec_duration(&d->j, spec, "minRuntime", false, out);
	if (!rc && *out > POLICY_MIN_RUNTIME_MAX_MS)
		rc = policy_jdec_fail_at(&d->j, "minRuntime", GPUQ_ERANGE,
					 "longer than 30 days (720h)");
	return rc;
}

/* A ClusterQueue duration of 1 s to 365 days, absent for off: the one rule
 * of spec.maxExecutionTime and spec.starvationLimit. */
static int limit_duration(policy_dec_t *d, const json_t *spec, const char *key, int64_t *out)
{
	int rc = gpuq_only(d, spec, key);

	*out = 0;
	if (!rc)
		rc = policy_jdec_duration(&d->j, spec, key, false, out);
	if (!rc && json_object_get(spec, key) && *out < 1000)
		rc = policy_jdec_fail_at(&d->j, key, GPUQ_ERANGE,
					 "shorter than 1s (leave it out for no limit)");
	if (!rc && *out > POLICY_MAX_EXEC_MAX_MS)
		rc = policy_jdec_fail_at(&d->j, key, GPUQ_ERANGE, "longer than 365 days (8760h)");
	return rc;
}

/* spec.maxExecutionTime. */
int policy_dec_max_exec(policy_dec_t *d, const json_t *spec, int64_t *out)
{
	return limit_duration(d, spec, "maxExecutionTime", out);
}

/* spec.starvationLimit. */
int policy_dec_starvation(policy_dec_t *d, const json_t *spec, int64_t *out)
{
	return limit_duration(d, spec, "starvationLimit", out);
}

/* spec.idleReclaim. */
int policy_dec_idle(policy_dec_t *d, const json_t *spec, policy_idle_t *out)
{
	static const char *const keys[] = {"utilizationBelow", "for", "action", NULL};
	static const char *const actions[] = {"Report", "Preempt", NULL};
	const json_t *b = NULL;
	int action = 0;
	size_t old;
	int rc = gpuq_only(d, spec, "idleReclaim");

	memset(out, 0, sizeof(*out));
	if (!rc)
		rc = policy_jdec_obj(&d->j, spec, "idleReclaim", false, &b);
	if (rc || !b)
		return rc;
	old = policy_jdec_key(&d->j, "idleReclaim");
	rc = policy_jdec_keys(&d->j, b, keys, NULL);
	out->below_pct = IDLE_BELOW_DEFAULT;
	if (!rc && json_object_get(b, "utilizationBelow"))
		rc = decimal(d, b, "utilizationBelow", 100, &out->below_pct);
	if (!rc)
		rc = policy_jdec_duration(&d->j, b, "for", true, &out->for_ms);
	if (!rc && (out->for_ms < IDLE_FOR_MIN_MS || out->for_ms > POLICY_MIN_RUNTIME_MAX_MS))
		rc = policy_jdec_fail_at(&d->j, "for", GPUQ_ERANGE, "want 1s..720h");
	if (!rc)
		rc = policy_jdec_enum(&d->j, b, "action", actions, &action);
	policy_jdec_pop(&d->j, old);
	out->action = rc ? POLICY_IDLE_OFF : action ? POLICY_IDLE_PREEMPT : POLICY_IDLE_REPORT;
	return rc;
}

/* The PriorityClass annotation POLICY_ANNOT_MIN_RUNTIME. */
int policy_dec_pc_min_runtime(policy_dec_t *d, const json_t *obj, int64_t *out)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const json_t *ann = json_is_object(meta) ? json_object_get(meta, "annotations") : NULL;
	const json_t *v =
	    json_is_object(ann) ? json_object_get(ann, POLICY_ANNOT_MIN_RUNTIME) : NULL;
	gpuq_diag_t why = {{0}};
	size_t old;
	int rc = GPUQ_OK;

	*out = 0;
	if (!v || json_is_null(v))
		return GPUQ_OK;
	old = policy_jdec_key(&d->j, "metadata.annotations[\"" POLICY_ANNOT_MIN_RUNTIME "\"]");
	if (!json_is_string(v))
		rc = policy_jdec_want(&d->j, v, "a duration string such as \"10m\"");
	else if (gpuq_duration_parse(json_string_value(v), out, &why))
		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "%s", why.msg);
	else if (*out < 1 || *out > POLICY_MIN_RUNTIME_MAX_MS)
		rc = policy_jdec_fail(&d->j, GPUQ_ERANGE, "\"%s\": want 1ms..720h",
				      json_string_value(v));
	policy_jdec_pop(&d->j, old);
	return rc;
}

/* At most one Namespace budget per namespace (the LocalQueues naming it
 * would not agree on one limit): the first declared keeps it, a later one
 * is left out. */
int policy_check_budgets(policy_t *p, gpuq_diag_t *diag)
{
	for (size_t i = 0; i < p->lqs.n; i++) {
		const policy_lq_t *a = p->lqs.items[i];

		if (!a->budget.present || !a->budget.namespace_scope ||
		    policy_is_out(p, POLICY_K_LQ, a->namespace_, a->name))
			continue;
		for (size_t k = 0; k < i; k++) {
			const policy_lq_t *b = p->lqs.items[k];
			char first[600];
			int rc;

			if (!b->budget.present || !b->budget.namespace_scope ||
			    strcmp(a->namespace_, b->namespace_) != 0 ||
			    policy_is_out(p, POLICY_K_LQ, b->namespace_, b->name))
				continue;
			if (b->origin.file)
				snprintf(first, sizeof(first), "%s, %s: document %zu", b->name,
					 b->origin.file, b->origin.doc);
			else
				snprintf(first, sizeof(first), "%s", b->name);
			rc = policy_leave_out(
			    p, diag, GPUQ_EINVAL, POLICY_K_LQ, a->namespace_, a->name, a->origin,
			    POLICY_REASON_BUDGET_CONFLICT,
			    "LocalQueue \"%s/%s\": spec.budget.scope: namespace %s has a Namespace "
			    "budget already (LocalQueue %s)",
			    a->namespace_, a->name, a->namespace_, first);
			if (rc)
				return rc;
			break;
		}
	}
	return GPUQ_OK;
}

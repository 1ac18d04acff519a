/*
 * The field decoder over jansson values (policy_json.h): paths, messages and
 * typed member getters, shared by the policy kinds (decode.c,
 * decode_queue.c) and the simulator's Trace (sim/trace.c). It allocates
 * nothing: strings are borrowed from the document.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy_json.h"

/* policy_jdec_duration's range message says "10 years". */
_Static_assert(GPUQ_DURATION_MAX_MS == 1000LL * 86400 * 365 * 10, "duration cap is 10 years");

void policy_jdec_init(policy_jdec_t *d, gpuq_diag_t *diag, const char *what)
{
	d->diag = diag;
	gpuq_strlcpy(d->what, what ? what : "", sizeof(d->what));
	d->path[0] = '\0';
	d->plen = 0;
}

/* ---- Messages and paths ---- */

static int fail_v(policy_jdec_t *d, int rc, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
static int fail_v(policy_jdec_t *d, int rc, const char *fmt, va_list ap)
{
	char msg[GPUQ_DIAG_MAX];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (d->what[0] && d->plen)
		gpuq_diag_set(d->diag, rc, "%s: %s: %s", d->what, d->path, msg);
	else if (d->what[0] || d->plen)
		gpuq_diag_set(d->diag, rc, "%s: %s", d->what[0] ? d->what : d->path, msg);
	else
		gpuq_diag_set(d->diag, rc, "%s", msg);
	return rc;
}

int policy_jdec_fail(policy_jdec_t *d, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rc = fail_v(d, rc, fmt, ap);
	va_end(ap);
	return rc;
}

int policy_jdec_fail_at(policy_jdec_t *d, const char *key, int rc, const char *fmt, ...)
{
	size_t old = policy_jdec_key(d, key);
	va_list ap;

	va_start(ap, fmt);
	rc = fail_v(d, rc, fmt, ap);
	va_end(ap);
	policy_jdec_pop(d, old);
	return rc;
}

/* Append pre, s (at most 200 bytes) and post to the path (truncating). */
static size_t path_add(policy_jdec_t *d, const char *pre, const char *s, const char *post)
{
	size_t old = d->plen;
	int n = snprintf(d->path + old, sizeof(d->path) - old, "%s%.200s%s", pre, s, post);

	if (n > 0)
		d->plen = old + (size_t)n < sizeof(d->path) ? old + (size_t)n : sizeof(d->path) - 1;
	return old;
}

size_t policy_jdec_key(policy_jdec_t *d, const char *key)
{
	return path_add(d, d->plen ? "." : "", key, "");
}

size_t policy_jdec_idx(policy_jdec_t *d, size_t i)
{
	char num[24];

	snprintf(num, sizeof(num), "%zu", i);
	return path_add(d, "[", num, "]");
}

size_t policy_jdec_mapkey(policy_jdec_t *d, const char *key)
{
	return path_add(d, "[", key, "]");
}

void policy_jdec_pop(policy_jdec_t *d, size_t len)
{
	d->plen = len;
	d->path[len] = '\0';
}

/* Shortest %g form that reads back as the same double ("0.1", not
 * "0.10000000000000001"): what a person wrote in a manifest. */
static void real_text(double v, char *buf, size_t cap)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, cap, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

void policy_jdec_value(const json_t *v, char *buf, size_t cap)
{
	switch (json_typeof(v)) {
	case JSON_STRING: {
		const char *s = json_string_value(v);
		size_t n = strlen(s);

		if (n > 100)
			snprintf(buf, cap, "\"%.100s...\"", s);
		else
			snprintf(buf, cap, "\"%s\"", s);
		break;
	}
	case JSON_INTEGER:
		snprintf(buf, cap, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	case JSON_REAL:
		real_text(json_real_value(v), buf, cap);
		break;
	case JSON_TRUE:
		snprintf(buf, cap, "true");
		break;
	case JSON_FALSE:
		snprintf(buf, cap, "false");
		break;
	case JSON_NULL:
		snprintf(buf, cap, "null");
		break;
	case JSON_OBJECT:
		snprintf(buf, cap, "a mapping");
		break;
	default:
		snprintf(buf, cap, "a list");
		break;
	}
}

int policy_jdec_want(policy_jdec_t *d, const json_t *v, const char *want)
{
	char val[128];

	policy_jdec_value(v, val, sizeof(val));
	return policy_jdec_fail(d, GPUQ_EINVAL, "must be %s, not %s", want, val);
}

/* ---- Member getters ---- */

static bool in_list(const char *key, const char *const *list)
{
	for (; list && *list; list++)
		if (!strcmp(key, *list))
			return true;
	return false;
}

bool policy_jdec_empty(const json_t *v)
{
	return json_is_null(v) || (json_is_array(v) && json_array_size(v) == 0) ||
	       (json_is_object(v) && json_object_size(v) == 0);
}

int policy_jdec_keys(policy_jdec_t *d, const json_t *obj, const char *const *allowed,
		     const char *const *unsupported)
{
	const char *key;
	const json_t *v;

	if (!json_is_object(obj))
		return policy_jdec_want(d, obj, "a mapping");
	json_object_foreach((json_t *)obj, key, v)
	{
		if (in_list(key, allowed))
			continue;
		if (in_list(key, unsupported) && policy_jdec_empty(v))
			continue;
		if (in_list(key, unsupported))
			return policy_jdec_fail_at(d, key, GPUQ_EINVAL, "not supported by gpuq");
		return policy_jdec_fail_at(d, key, GPUQ_EINVAL, "unknown field");
	}
	return GPUQ_OK;
}

int policy_jdec_member(policy_jdec_t *d, const json_t *obj, const char *key, bool required,
		       const json_t **out)
{
	const json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (!v || json_is_null(v))
		return required ? policy_jdec_fail_at(d, key, GPUQ_EINVAL, "required") : GPUQ_OK;
	*out = v;
	return GPUQ_OK;
}

/* Check v's type at path key; on error the path names key. */
static int typed(policy_jdec_t *d, const char *key, const json_t *v, bool ok, const char *want)
{
	size_t old;
	int rc;

	if (ok)
		return GPUQ_OK;
	old = policy_jdec_key(d, key);
	rc = policy_jdec_want(d, v, want);
	policy_jdec_pop(d, old);
	return rc;
}

int policy_jdec_obj(policy_jdec_t *d, const json_t *obj, const char *key, bool required,
		    const json_t **out)
{
	const json_t *v;
	int rc = policy_jdec_member(d, obj, key, required, &v);

	if (rc || !v)
		return rc;
	rc = typed(d, key, v, json_is_object(v), "a mapping");
	if (rc == GPUQ_OK)
		*out = v;
	return rc;
}

int policy_jdec_arr(policy_jdec_t *d, const json_t *obj, const char *key, bool required, size_t max,
		    const json_t **out)
{
	const json_t *v;
	int rc = policy_jdec_member(d, obj, key, required, &v);

	if (rc || !v)
		return rc;
	rc = typed(d, key, v, json_is_array(v), "a list");
	if (rc)
		return rc;
	if (json_array_size(v) > max)
		return policy_jdec_fail_at(d, key, GPUQ_ELIMIT,
					   "%zu entries, more than the %zu allowed",
					   json_array_size(v), max);
	*out = v;
	return GPUQ_OK;
}

int policy_jdec_str_value(policy_jdec_t *d, const json_t *v, size_t max, const char **out)
{
	if (!json_is_string(v))
		return policy_jdec_want(d, v, "a string");
	if (json_string_length(v) > max)
		return policy_jdec_fail(d, GPUQ_EINVAL, "%zu bytes long, more than %zu",
					json_string_length(v), max);
	*out = json_string_value(v);
	return GPUQ_OK;
}

int policy_jdec_str(policy_jdec_t *d, const json_t *obj, const char *key, bool required, size_t max,
		    const char **out)
{
	const json_t *v;
	size_t old;
	int rc = policy_jdec_member(d, obj, key, required, &v);

	if (rc || !v)
		return rc;
	old = policy_jdec_key(d, key);
	rc = policy_jdec_str_value(d, v, max, out);
	policy_jdec_pop(d, old);
	return rc;
}

int policy_jdec_int(policy_jdec_t *d, const json_t *obj, const char *key, bool required,
		    int64_t min, int64_t max, int64_t *out)
{
	const json_t *v;
	size_t old;
	int rc = policy_jdec_member(d, obj, key, required, &v);

	if (rc || !v)
		return rc;
	old = policy_jdec_key(d, key);
	if (!json_is_integer(v))
		rc = policy_jdec_want(d, v, "an integer");
	else if (json_integer_value(v) < min || json_integer_value(v) > max)
		rc = policy_jdec_fail(d, GPUQ_ERANGE,
				      "%" JSON_INTEGER_FORMAT " is out of range [%" PRId64
				      ", %" PRId64 "]",
				      json_integer_value(v), min, max);
	else
		*out = json_integer_value(v);
	policy_jdec_pop(d, old);
	return rc;
}

int policy_jdec_bool(policy_jdec_t *d, const json_t *obj, const char *key, bool *out)
{
	const json_t *v;
	int rc = policy_jdec_member(d, obj, key, false, &v);

	if (rc || !v)
		return rc;
	rc = typed(d, key, v, json_is_boolean(v), "true or false");
	if (rc == GPUQ_OK)
		*out = json_is_true(v);
	return rc;
}

int policy_jdec_enum(policy_jdec_t *d, const json_t *obj, const char *key, const char *const *names,
		     int *out)
{
	const json_t *v;
	char want[256] = "";
	size_t used = 0;
	int rc = policy_jdec_member(d, obj, key, false, &v);

	if (rc || !v)
		return rc;
	rc = typed(d, key, v, json_is_string(v), "a string");
	if (rc)
		return rc;
	for (int i = 0; names[i]; i++) {
		if (!strcmp(json_string_value(v), names[i])) {
			*out = i;
			return GPUQ_OK;
		}
		used += (size_t)snprintf(want + used, sizeof(want) - used, "%s%s",
					 i ? (names[i + 1] ? ", " : " or ") : "",
					 names[i][0] ? names[i] : "\"\"");
		if (used >= sizeof(want))
			used = sizeof(want) - 1;
	}
	return policy_jdec_fail_at(d, key, GPUQ_EINVAL, "unknown value \"%.100s\" (want %s)",
				   json_string_value(v), want);
}

int policy_jdec_duration(policy_jdec_t *d, const json_t *obj, const char *key, bool required,
			 int64_t *out_ms)
{
	const json_t *v;
	gpuq_diag_t why = {""};
	int rc = policy_jdec_member(d, obj, key, required, &v);

	if (rc || !v)
		return rc;
	if (json_is_integer(v) && json_integer_value(v) >= 0 &&
	    json_integer_value(v) <= GPUQ_DURATION_MAX_MS) {
		*out_ms = json_integer_value(v);
		return GPUQ_OK;
	}
	if (json_is_integer(v))
		return policy_jdec_fail_at(d, key, GPUQ_ERANGE,
					   "%" JSON_INTEGER_FORMAT " ms is outside 0..10 years",
					   json_integer_value(v));
	if (!json_is_string(v))
		return typed(d, key, v, false, "milliseconds or a string like \"1.5s\"");
	rc = gpuq_duration_parse(json_string_value(v), out_ms, &why);
	return rc ? policy_jdec_fail_at(d, key, rc, "%s", why.msg) : GPUQ_OK;
}

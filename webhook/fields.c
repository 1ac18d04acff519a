/* webhook/fields.c: typed members of the review reader's tree (admit_json.c),
 * the one getter set the admission rules' decoding (workload.c) and the
 * controller's object decoding (object.c) both use. A member of the wrong
 * type is refused, naming the object, the field and the value; it is never
 * read as absent, which would let a malformed object pass unchecked. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "webhook/admit_internal.h"

const char *webhook_jv_type_name(const webhook_jv_t *v)
{
	static const char *const names[] = {"null",	"false",    "true",	"a number",
					    "a string", "an array", "an object"};

	return names[v->type];
}

const char *webhook_json_str(const webhook_jv_t *obj, const char *key)
{
	return webhook_jv_str(webhook_jv_get(obj, key));
}

const webhook_jv_t *webhook_json_obj(const webhook_jv_t *obj, const char *key)
{
	const webhook_jv_t *v = webhook_jv_get(obj, key);

	return webhook_jv_is(v, WEBHOOK_JV_OBJECT) ? v : NULL;
}

int webhook_fields_refuse(const webhook_fields_t *f, const char *path, const char *fmt, ...)
{
	char what[GPUQ_DIAG_MAX / 2];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return gpuq_diag_set(f->diag, GPUQ_EINVAL, "%s \"%.253s\": %s: %s", f->kind_name, f->name,
			     path, what);
}

int webhook_fields_want(const webhook_fields_t *f, const char *path, const webhook_jv_t *v,
			webhook_jv_type_t type)
{
	const char *want = type == WEBHOOK_JV_OBJECT  ? "an object"
			   : type == WEBHOOK_JV_ARRAY ? "an array"
						      : "a string";

	return webhook_fields_refuse(f, path, "must be %s, not %s%s%.64s%s", want,
				     webhook_jv_type_name(v), v->s ? " \"" : "", v->s ? v->s : "",
				     v->s ? "\"" : "");
}

/* Member key of obj, NULL when absent or null. */
static const webhook_jv_t *present(const webhook_jv_t *obj, const char *key)
{
	const webhook_jv_t *v = webhook_jv_get(obj, key);

	return webhook_jv_is(v, WEBHOOK_JV_NULL) ? NULL : v;
}

int webhook_fields_typed(const webhook_fields_t *f, const webhook_jv_t *obj, const char *key,
			 webhook_jv_type_t type, const char *path, const webhook_jv_t **out)
{
	const webhook_jv_t *v = present(obj, key);

	*out = NULL;
	if (!v)
		return GPUQ_OK;
	if (v->type != type)
		return webhook_fields_want(f, path, v, type);
	*out = v;
	return GPUQ_OK;
}

int webhook_fields_str(const webhook_fields_t *f, const webhook_jv_t *obj, const char *key,
		       const char *path, bool required, const char **out)
{
	const webhook_jv_t *v;
	int rc = webhook_fields_typed(f, obj, key, WEBHOOK_JV_STRING, path, &v);

	*out = v ? v->s : NULL;
	if (!rc && required && (!*out || !**out))
		return webhook_fields_refuse(f, path, "Required value");
	return rc;
}

/* What [min, max] allows, in the words the rules have always used. */
static void int_want(int64_t min, int64_t max, char *buf, size_t cap)
{
	if (min == 0 && max == INT64_MAX)
		snprintf(buf, cap, "a non-negative integer");
	else if (min == INT32_MIN && max == INT32_MAX)
		snprintf(buf, cap, "a 32-bit integer");
	else
		snprintf(buf, cap, "a whole number from %lld to %lld", (long long)min,
			 (long long)max);
}

int webhook_fields_int(const webhook_fields_t *f, const webhook_jv_t *obj, const char *key,
		       const char *path, int64_t def, int64_t min, int64_t max, int64_t *out)
{
	const webhook_jv_t *v = present(obj, key);
	char want[96];

	*out = def;
	if (!v || (webhook_jv_int(v, out) && *out >= min && *out <= max))
		return GPUQ_OK;
	int_want(min, max, want, sizeof(want));
	return webhook_fields_refuse(f, path, "invalid value %s%s%.64s%s: must be %s",
				     v->s ? "" : webhook_jv_type_name(v), v->s ? "\"" : "",
				     v->s ? v->s : "", v->s ? "\"" : "", want);
}

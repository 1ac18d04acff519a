/* jv/fields.c: typed members of a document (jv.h), the one getter set every
 * decoder of the reader's tree uses. A member of the wrong type is refused,
 * naming the object, the field and the value; it is never read as absent,
 * which would let a malformed object pass unchecked. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "jv/jv.h"

const char *jv_type_name(const jv_t *v)
{
	static const char *const names[] = {"null",	"false",    "true",	"a number",
					    "a string", "an array", "an object"};

	return names[v->type];
}

const char *jv_member_str(const jv_t *obj, const char *key)
{
	return jv_str(jv_get(obj, key));
}

const jv_t *jv_member_obj(const jv_t *obj, const char *key)
{
	const jv_t *v = jv_get(obj, key);

	return jv_is(v, JV_OBJECT) ? v : NULL;
}

int jv_fields_refuse(const jv_fields_t *f, const char *path, const char *fmt, ...)
{
	char what[GPUQ_DIAG_MAX / 2];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return gpuq_diag_set(f->diag, GPUQ_EINVAL, "%s \"%.253s\": %s: %s", f->kind_name, f->name,
			     path, what);
}

int jv_fields_want(const jv_fields_t *f, const char *path, const jv_t *v, jv_type_t type)
{
	const char *want = type == JV_OBJECT  ? "an object"
			   : type == JV_ARRAY ? "an array"
					      : "a string";

	return jv_fields_refuse(f, path, "must be %s, not %s%s%.64s%s", want, jv_type_name(v),
				v->s ? " \"" : "", v->s ? v->s : "", v->s ? "\"" : "");
}

/* Member key of obj, NULL when absent or null. */
static const jv_t *present(const jv_t *obj, const char *key)
{
	const jv_t *v = jv_get(obj, key);

	return jv_is(v, JV_NULL) ? NULL : v;
}

bool jv_member_typed(const jv_t *obj, const char *key, jv_type_t type, const jv_t **out)
{
	const jv_t *v = present(obj, key);

	*out = v && v->type == type ? v : NULL;
	return !v || v->type == type;
}

int jv_fields_typed(const jv_fields_t *f, const jv_t *obj, const char *key, jv_type_t type,
		    const char *path, const jv_t **out)
{
	const jv_t *v = present(obj, key);

	*out = NULL;
	if (!v)
		return GPUQ_OK;
	if (v->type != type)
		return jv_fields_want(f, path, v, type);
	*out = v;
	return GPUQ_OK;
}

int jv_fields_str(const jv_fields_t *f, const jv_t *obj, const char *key, const char *path,
		  bool required, const char **out)
{
	const jv_t *v;
	int rc = jv_fields_typed(f, obj, key, JV_STRING, path, &v);

	*out = v ? v->s : NULL;
	if (!rc && required && (!*out || !**out))
		return jv_fields_refuse(f, path, "Required value");
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

int jv_fields_int(const jv_fields_t *f, const jv_t *obj, const char *key, const char *path,
		  int64_t def, int64_t min, int64_t max, int64_t *out)
{
	const jv_t *v = present(obj, key);
	char want[96];

	*out = def;
	if (!v || (jv_int(v, out) && *out >= min && *out <= max))
		return GPUQ_OK;
	int_want(min, max, want, sizeof(want));
	return jv_fields_refuse(f, path, "invalid value %s%s%.64s%s: must be %s",
				v->s ? "" : jv_type_name(v), v->s ? "\"" : "", v->s ? v->s : "",
				v->s ? "\"" : "", want);
}

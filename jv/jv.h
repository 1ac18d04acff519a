/*
 * jv: a small read-only JSON document, and the one set of typed member
 * reads over it. The reader of the admission path and of every watched
 * workload object: jansson builds a heap object per value and reads byte by
 * byte through a stream layer (about 7x the instructions on a 4.3 KB Job,
 * bench/bench_parse), which alone would blow the admission latency budget and
 * the controller's per-event cost.
 *
 * The design decision that matters: one allocation holds every node and a
 * copy of the text, and a non-recursive pass builds the tree,
 * NUL-terminating and decoding each string and number in place in that
 * copy. The allocation has room for as many values as JSON of that length
 * can hold (up to JV_VALUES_MAX; the memory past the values is never
 * touched), so a document within the caps is read in that one pass; any
 * other is read again the way it always was, a scan that counts the values
 * and checks the nesting first, then a pass with room for what it counted,
 * so a refusal names the same cap or the same byte. Strict RFC 8259: UTF-8 checked, escapes decoded
 * (\u0000 refused), numbers kept as their text so quantities parse exactly.
 * Duplicate object keys are not refused: lookups take the first (the
 * apiserver never sends duplicates). Pure: no I/O, no clock, no globals;
 * a document is read by any number of threads once parsed.
 */
#ifndef GPUQ_JV_H
#define GPUQ_JV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* Deepest nesting accepted (a Pod with managedFields nests about 20 deep
 * inside a review or a watch event): the parser's stack of open containers,
 * sized before it runs. */
#define JV_DEPTH_MAX 64
/* JSON values (keys included) in one document: a real Pod with
 * managedFields has a few thousand; each costs 40 bytes of memory. More is
 * refused, so a 3 MiB body of `[1,1,...]` cannot cost 60 MiB. */
#define JV_VALUES_MAX 262144
/* Largest document: the apiserver's own request cap (3 MiB). */
#define JV_BYTES_MAX (3u << 20)

typedef enum {
	JV_NULL = 0,
	JV_FALSE = 1,
	JV_TRUE = 2,
	JV_NUMBER = 3,
	JV_STRING = 4,
	JV_ARRAY = 5,
	JV_OBJECT = 6,
} jv_type_t;

typedef struct jv {
	jv_type_t type;		/* kind of value */
	bool fraction;		/* number: has a fraction or an exponent */
	uint32_t n;		/* array: elements; object: members */
	uint32_t len;		/* string/number: bytes in s (documents are
				   under JV_BYTES_MAX) */
	const char *s;		/* string (decoded) or number (as written),
				   NUL-terminated; NULL for other kinds */
	const struct jv *first; /* array: first element; object: first key */
	const struct jv *next;	/* next element or key; a key's next is its value */
} jv_t;

typedef struct {
	jv_t *root; /* the top value (NULL after an error) */
	char *mem;  /* owned: every node and string, one allocation */
} jv_doc_t;

/* Parse buf[0..len) (need not be NUL-terminated). GPUQ_OK; GPUQ_EINVAL (not
 * JSON, or not UTF-8) or GPUQ_ELIMIT (nested deeper than JV_DEPTH_MAX, or
 * more than JV_VALUES_MAX values, wherever a syntax error is) with a
 * sentence in err; GPUQ_ENOMEM. Nodes live until jv_doc_free. */
int jv_doc_parse(jv_doc_t *d, const char *buf, size_t len, char *err, size_t cap);
/* A member's name for jv_doc_parse_skipping, with its length; JV_KEY("env")
 * makes one from a literal. */
typedef struct {
	const char *s;
	size_t len;
} jv_key_t;
#define JV_KEY(lit)                                                                                \
	{                                                                                          \
		"" lit "", sizeof(lit) - 1                                                         \
	}
/* Most keys in a skip list. */
#define JV_SKIP_MAX 32
/* jv_doc_parse for a reader that never reads some members (the admission
 * path: a container's env, command, probes...): skip is a list of keys
 * ended by {NULL, 0} (at most JV_SKIP_MAX, each of 1 to 31 bytes) whose
 * member, at any depth, is left out of its object when its value is an
 * array or an object: no node is made for it, jv_get finds nothing and the
 * object's n does not count it. A member of such a name holding a string,
 * a number or a literal (a label "env": "prod") is read as always. A
 * skipped value is passed over 64 bytes at a time, checked only for
 * strings that end and brackets that balance (counted, not matched by
 * kind; not its UTF-8, escapes, numbers, commas or colons), and its values
 * count against no cap but the depth; everything else is read as strictly
 * as by jv_doc_parse. NULL skip: jv_doc_parse. */
int jv_doc_parse_skipping(jv_doc_t *d, const char *buf, size_t len, const jv_key_t *skip, char *err,
			  size_t cap);
void jv_doc_free(jv_doc_t *d);
/* Member key of obj (the first one of that name), or NULL (obj NULL or not
 * an object, or no such key). */
const jv_t *jv_get(const jv_t *obj, const char *key);
/* Element i of arr, or NULL. O(i). */
const jv_t *jv_at(const jv_t *arr, size_t i);
/* An integral number (no fraction, no exponent) within int64 into *out. */
bool jv_int(const jv_t *v, int64_t *out);

static inline bool jv_is(const jv_t *v, jv_type_t type)
{
	return v && v->type == type;
}

/* Elements of an array (0 for anything else). */
static inline size_t jv_count(const jv_t *v)
{
	return jv_is(v, JV_ARRAY) ? v->n : 0;
}

/* The first element of an array (follow ->next), or NULL. */
static inline const jv_t *jv_first(const jv_t *v)
{
	return v && v->type == JV_ARRAY ? v->first : NULL;
}

/* The text of a string value, or NULL. */
static inline const char *jv_str(const jv_t *v)
{
	return jv_is(v, JV_STRING) ? v->s : NULL;
}

/* ---- Typed members of a document (fields.c) ----
 *
 * The one getter set over the reader's tree, for every decoder of it
 * (workload/ and webhook/). Lenient reads return NULL for
 * anything not of the asked type; checked reads refuse a member of another
 * type with GPUQ_EINVAL and one sentence naming the object, the field and
 * the value, and read an absent or null member as absent. */

/* The object whose members are read, named in every refusal:
 * `<kind> "<name>": <path>: <what>`. */
typedef struct {
	const char *kind_name; /* "Pod", "Job" ("object" until the kind is known) */
	const char *name;      /* its name ("" until known; at most 253 bytes shown) */
	gpuq_diag_t *diag;     /* where refusals go */
} jv_fields_t;

/* What v is, for messages: "null", "false", "true", "a number", "a string",
 * "an array" or "an object". */
const char *jv_type_name(const jv_t *v);
/* Member key of obj of type (object, array or string) into *out, NULL when
 * absent or null: true; false (*out NULL) when it is of another type, where
 * jv_fields_typed would refuse it. For a caller that builds the refusal's
 * path only when there is one to write (the admission hot path). */
bool jv_member_typed(const jv_t *obj, const char *key, jv_type_t type, const jv_t **out);
/* Member key of obj as a string, or NULL (absent, null, or not a string). */
const char *jv_member_str(const jv_t *obj, const char *key);
/* Member key of obj as an object, or NULL (absent, null, or not an object). */
const jv_t *jv_member_obj(const jv_t *obj, const char *key);

/* Refuse: GPUQ_EINVAL with `<kind> "<name>": <path>: <fmt...>`. */
int jv_fields_refuse(const jv_fields_t *f, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Refuse v at path for not being of type (an object, an array or a string):
 * "must be an object, not a string \"x\"" (a string's or number's text
 * shown, cut at 64 bytes). */
int jv_fields_want(const jv_fields_t *f, const char *path, const jv_t *v, jv_type_t type);
/* Member key of obj of type (object, array or string) into *out; NULL when
 * absent or null; refused (jv_fields_want) when of another type. */
int jv_fields_typed(const jv_fields_t *f, const jv_t *obj, const char *key, jv_type_t type,
		    const char *path, const jv_t **out);
/* A string member, borrowed from the document: NULL when absent or null;
 * when required, absent, null and "" are refused ("Required value"). */
int jv_fields_str(const jv_fields_t *f, const jv_t *obj, const char *key, const char *path,
		  bool required, const char **out);
/* An integral number member within [min, max] (no fraction, no exponent);
 * def when absent or null. Refused: "invalid value \"2.5\": must be a
 * non-negative integer" (or a 32-bit integer, or a whole number from min to
 * max). */
int jv_fields_int(const jv_fields_t *f, const jv_t *obj, const char *key, const char *path,
		  int64_t def, int64_t min, int64_t max, int64_t *out);

#endif

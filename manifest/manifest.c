/*
 * Manifest parsing: YAML (libyaml's event parser) or JSON (jansson) into
 * jansson values, one callback per object. Caps: MANIFEST_FILE_MAX bytes,
 * MANIFEST_DEPTH_MAX nesting, MANIFEST_DOCS_MAX documents and objects; anchors,
 * aliases and merge keys are refused so a small file can never expand into a
 * large tree ("billion laughs").
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include <jansson.h>

#include "manifest/manifest.h"

/* Report an allocation failure; always GPUQ_ENOMEM (a constant the
 * static analyzer can follow). */
static int oom(gpuq_diag_t *diag)
{
	gpuq_diag_set(diag, GPUQ_ENOMEM, "out of memory");
	return GPUQ_ENOMEM;
}

typedef struct {
	const char *name;   /* manifest name, for messages */
	manifest_doc_cb cb; /* per-object callback */
	void *ctx;	    /* its context */
	gpuq_diag_t *diag;  /* where errors go */
	size_t doc;	    /* 1-based number of the current document */
	size_t n_objs;	    /* objects passed to cb so far */
} run_t;

typedef struct {
	json_t *node; /* mapping or sequence being filled */
	char *key;    /* mapping: the key waiting for its value (malloc'd), or NULL */
} frame_t;

static const char *const YAML_STR = "tag:yaml.org,2002:str";
static const char *const YAML_TAGS[] = {"tag:yaml.org,2002:null", "tag:yaml.org,2002:bool",
					"tag:yaml.org,2002:int", "tag:yaml.org,2002:float", NULL};

static int fail_here(run_t *r, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Report an error at the current document: "<name>: document <n>: <msg>". */
static int fail_here(run_t *r, int rc, const char *fmt, ...)
{
	char msg[GPUQ_DIAG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (r->doc)
		gpuq_diag_set(r->diag, rc, "%s: document %zu: %s", r->name, r->doc, msg);
	else
		gpuq_diag_set(r->diag, rc, "%s: %s", r->name, msg);
	return rc;
}

static int call_cb(run_t *r, const json_t *obj, long item)
{
	int rc;

	if (!json_is_object(obj)) {
		char msg[64];

		snprintf(msg, sizeof(msg), "%s", json_is_array(obj) ? "a list" : "a scalar");
		rc =
		    gpuq_diag_set(r->diag, GPUQ_EINVAL, "an object must be a mapping, not %s", msg);
	} else if (++r->n_objs > MANIFEST_DOCS_MAX) {
		rc = gpuq_diag_set(r->diag, GPUQ_ELIMIT, "more than %d objects in one file",
				   MANIFEST_DOCS_MAX);
	} else {
		rc = r->cb(r->ctx, r->doc, obj, r->diag);
	}
	if (rc == GPUQ_OK)
		return GPUQ_OK;
	if (item >= 0)
		gpuq_diag_prefix(r->diag, "%s: document %zu: items[%ld]: ", r->name, r->doc, item);
	else
		gpuq_diag_prefix(r->diag, "%s: document %zu: ", r->name, r->doc);
	return rc;
}

/* One complete document: skip if empty, unwrap List / top-level array. */
static int emit(run_t *r, const json_t *root)
{
	const json_t *items = NULL, *kind;
	size_t i;
	int rc;

	if (!root || json_is_null(root))
		return GPUQ_OK;
	if (json_is_array(root))
		items = root;
	kind = json_object_get(root, "kind");
	if (json_is_string(kind) && strcmp(json_string_value(kind), "List") == 0) {
		items = json_object_get(root, "items");
		if (!json_is_array(items) && !json_is_null(items) && items)
			return fail_here(r, GPUQ_EINVAL, "List: items: must be a list");
		if (!items)
			return GPUQ_OK;
	}
	if (!items)
		return call_cb(r, root, -1);
	for (i = 0; i < json_array_size(items); i++) {
		rc = call_cb(r, json_array_get(items, i), (long)i);
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* ---- YAML scalars, typed as the YAML 1.2 core schema does ---- */

static bool all_in(const char *s, const char *set)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!strchr(set, *s))
			return false;
	return true;
}

/* Whether digits (in base, negated when neg) fit int64; *out gets them.
 * One that does not fit stays a string. */
static bool int_value(const char *digits, int base, bool neg, json_int_t *out)
{
	unsigned long long u;
	char *end;

	errno = 0;
	u = strtoull(digits, &end, base);
	if (errno || *end)
		return false;
	if (neg) {
		if (u > (unsigned long long)INT64_MAX + 1)
			return false;
		*out = u == (unsigned long long)INT64_MAX + 1 ? INT64_MIN : -(json_int_t)u;
		return true;
	}
	if (u > (unsigned long long)INT64_MAX)
		return false;
	*out = (json_int_t)u;
	return true;
}

static bool is_float(const char *s)
{
	const char *p = s;
	bool digits = false;

	if (*p == '+' || *p == '-')
		p++;
	while (*p >= '0' && *p <= '9')
		p++, digits = true;
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9')
			p++, digits = true;
	}
	if (!digits)
		return false;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!(*p >= '0' && *p <= '9'))
			return false;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return *p == '\0';
}

/* The typed value of a plain scalar (NULL only when out of memory or, as a
 * string, not UTF-8). */
static json_t *plain_value(const char *s, size_t len)
{
	json_int_t i = 0;
	bool fits = false, neg = s[0] == '-';
	const char *body = (s[0] == '-' || s[0] == '+') ? s + 1 : s;

	if (len == 0 || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
	    !strcmp(s, "NULL"))
		return json_null();
	if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
		return json_true();
	if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
		return json_false();
	if (all_in(body, "0123456789"))
		fits = int_value(body, 10, neg, &i);
	else if (!strncmp(s, "0o", 2) && all_in(s + 2, "01234567"))
		fits = int_value(s + 2, 8, false, &i);
	else if (!strncmp(s, "0x", 2) && all_in(s + 2, "0123456789abcdefABCDEF"))
		fits = int_value(s + 2, 16, false, &i);
	else if (is_float(s)) {
		double d = strtod(s, NULL);

		if (isfinite(d))
			return json_real(d);
	}
	return fits ? json_integer(i) : json_stringn(s, len);
}

/* The value of a scalar event, or NULL with diag set. */
static json_t *scalar_value(run_t *r, const yaml_event_t *ev, int *rc)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	const char *tag = (const char *)ev->data.scalar.tag;
	bool forced_str;
	json_t *v;

	*rc = GPUQ_EINVAL;
	if (memchr(s, '\0', len)) {
		fail_here(r, GPUQ_EINVAL, "a scalar contains a NUL byte");
		return NULL;
	}
	/* "!" (non-specific) and !!str make a string; the core schema's own
	 * tags resolve as an untagged plain scalar would; others are refused. */
	forced_str = tag && (strcmp(tag, "!") == 0 || strcmp(tag, YAML_STR) == 0);
	if (tag && !forced_str) {
		bool known = false;

		for (size_t i = 0; YAML_TAGS[i]; i++)
			known |= !strcmp(tag, YAML_TAGS[i]);
		if (!known) {
			fail_here(r, GPUQ_EINVAL, "YAML tag %s is not supported", tag);
			return NULL;
		}
	}
	if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !forced_str)
		v = plain_value(s, len);
	else
		v = json_stringn(s, len);
	if (!v) {
		/* jansson refuses invalid UTF-8 (libyaml checked the input, but
		 * escapes can still form surrogates) or ran out of memory */
		if (gpuq_utf8_valid(s, len)) {
			*rc = GPUQ_ENOMEM;
			fail_here(r, GPUQ_ENOMEM, "out of memory");
		} else {
			fail_here(r, GPUQ_EINVAL, "a scalar is not valid UTF-8");
		}
		return NULL;
	}
	*rc = GPUQ_OK;
	return v;
}

/* ---- YAML event loop ---- */

typedef struct {
	frame_t st[MANIFEST_DEPTH_MAX]; /* open mappings/sequences */
	size_t depth;			/* entries used in st */
	json_t *root;			/* completed document root */
} tree_t;

static void tree_reset(tree_t *t)
{
	while (t->depth) {
		t->depth--;
		json_decref(t->st[t->depth].node);
		free(t->st[t->depth].key);
	}
	json_decref(t->root);
	t->root = NULL;
}

/* Place a completed value (steals v). */
static int attach(run_t *r, tree_t *t, json_t *v)
{
	frame_t *f;
	int rc;

	if (t->depth == 0) {
		t->root = v;
		return GPUQ_OK;
	}
	f = &t->st[t->depth - 1];
	if (json_is_array(f->node))
		rc = json_array_append_new(f->node, v);
	else {
		rc = json_object_set_new(f->node, f->key, v);
		free(f->key);
		f->key = NULL;
	}
	return rc ? oom(r->diag) : GPUQ_OK;
}

static int take_key(run_t *r, tree_t *t, const yaml_event_t *ev)
{
	frame_t *f = &t->st[t->depth - 1];
	const char *s = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;

	if (memchr(s, '\0', len))
		return fail_here(r, GPUQ_EINVAL, "a mapping key contains a NUL byte");
	if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !strcmp(s, "<<"))
		return fail_here(r, GPUQ_EINVAL, "merge keys (%s) are not supported", s);
	if (json_object_get(f->node, s))
		return fail_here(r, GPUQ_EINVAL, "duplicate mapping key \"%.200s\"", s);
	f->key = strdup(s);
	if (!f->key)
		return oom(r->diag);
	return GPUQ_OK;
}

static bool awaiting_key(const tree_t *t)
{
	const frame_t *f;

	if (t->depth == 0)
		return false;
	f = &t->st[t->depth - 1];
	return json_is_object(f->node) && !f->key;
}

static int open_node(run_t *r, tree_t *t, bool mapping, const yaml_char_t *anchor)
{
	json_t *n;

	if (anchor)
		return fail_here(r, GPUQ_EINVAL, "anchors (&%.100s) are not supported",
				 (const char *)anchor);
	if (awaiting_key(t))
		return fail_here(r, GPUQ_EINVAL, "mapping keys must be scalars");
	if (t->depth == MANIFEST_DEPTH_MAX)
		return fail_here(r, GPUQ_ELIMIT, "nested deeper than %d levels",
				 MANIFEST_DEPTH_MAX);
	n = mapping ? json_object() : json_array();
	if (!n)
		return oom(r->diag);
	t->st[t->depth].node = n;
	t->st[t->depth].key = NULL;
	t->depth++;
	return GPUQ_OK;
}

static int close_node(run_t *r, tree_t *t)
{
	json_t *n = t->st[t->depth - 1].node;

	/* libyaml pairs every end with its start, so depth > 0 here. */
	t->depth--;
	return attach(r, t, n);
}

static int on_event(run_t *r, tree_t *t, const yaml_event_t *ev)
{
	json_t *v;
	int rc;

	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT:
		if (++r->doc > MANIFEST_DOCS_MAX)
			return fail_here(r, GPUQ_ELIMIT, "more than %d documents",
					 MANIFEST_DOCS_MAX);
		return GPUQ_OK;
	case YAML_DOCUMENT_END_EVENT:
		rc = emit(r, t->root);
		json_decref(t->root);
		t->root = NULL;
		return rc;
	case YAML_ALIAS_EVENT:
		return fail_here(r, GPUQ_EINVAL, "aliases (*%.100s) are not supported",
				 (const char *)ev->data.alias.anchor);
	case YAML_SCALAR_EVENT:
		if (ev->data.scalar.anchor)
			return fail_here(r, GPUQ_EINVAL, "anchors (&%.100s) are not supported",
					 (const char *)ev->data.scalar.anchor);
		if (awaiting_key(t))
			return take_key(r, t, ev);
		v = scalar_value(r, ev, &rc);
		return v ? attach(r, t, v) : rc;
	case YAML_MAPPING_START_EVENT:
		return open_node(r, t, true, ev->data.mapping_start.anchor);
	case YAML_SEQUENCE_START_EVENT:
		return open_node(r, t, false, ev->data.sequence_start.anchor);
	case YAML_MAPPING_END_EVENT:
	case YAML_SEQUENCE_END_EVENT:
		return close_node(r, t);
	default:
		return GPUQ_OK;
	}
}

static int yaml_fail(run_t *r, const yaml_parser_t *ps)
{
	char msg[512];

	if (ps->error == YAML_MEMORY_ERROR)
		return oom(r->diag);
	snprintf(msg, sizeof(msg), "line %zu column %zu: YAML syntax error: %s%s%s",
		 ps->problem_mark.line + 1, ps->problem_mark.column + 1,
		 ps->problem ? ps->problem : "unknown problem", ps->context ? " " : "",
		 ps->context ? ps->context : "");
	return fail_here(r, GPUQ_EINVAL, "%s", msg);
}

static int parse_yaml(run_t *r, const char *buf, size_t len)
{
	yaml_parser_t ps;
	yaml_event_t ev;
	tree_t t;
	int rc = GPUQ_OK;
	bool done = false;

	memset(&t, 0, sizeof(t));
	if (!yaml_parser_initialize(&ps))
		return oom(r->diag);
	yaml_parser_set_input_string(&ps, (const unsigned char *)buf, len);
	while (!done && rc == GPUQ_OK) {
		if (!yaml_parser_parse(&ps, &ev)) {
			rc = yaml_fail(r, &ps);
			break;
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		rc = on_event(r, &t, &ev);
		yaml_event_delete(&ev);
	}
	tree_reset(&t);
	yaml_parser_delete(&ps);
	return rc;
}

/* ---- JSON ---- */

static bool too_deep(const json_t *v, size_t depth)
{
	const char *key;
	const json_t *c;
	size_t i;

	if (!json_is_object(v) && !json_is_array(v))
		return false;
	if (depth >= MANIFEST_DEPTH_MAX)
		return true;
	if (json_is_array(v)) {
		json_array_foreach(v, i, c) if (too_deep(c, depth + 1)) return true;
		return false;
	}
	json_object_foreach((json_t *)v, key, c) if (too_deep(c, depth + 1)) return true;
	return false;
}

/* Parse as JSON. *not_json set (and nothing reported) when the text does not
 * parse and the caller may still try YAML. */
static int parse_json(run_t *r, const char *buf, size_t len, bool must, bool *not_json)
{
	json_error_t err;
	json_t *root;
	int rc;

	*not_json = false;
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
	if (!root) {
		char msg[300];

		if (!must) {
			*not_json = true;
			return GPUQ_OK;
		}
		snprintf(msg, sizeof(msg), "line %d column %d: JSON syntax error: %s", err.line,
			 err.column, err.text);
		return fail_here(r, GPUQ_EINVAL, "%s", msg);
	}
	r->doc = 1;
	if (too_deep(root, 1))
		rc = fail_here(r, GPUQ_ELIMIT, "nested deeper than %d levels", MANIFEST_DEPTH_MAX);
	else
		rc = emit(r, root);
	json_decref(root);
	return rc;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

int manifest_parse(const char *name, const char *buf, size_t len, manifest_doc_cb cb, void *ctx,
		   gpuq_diag_t *diag)
{
	run_t r = {name ? name : "<manifest>", cb, ctx, diag, 0, 0};
	bool not_json = false;
	size_t i = 0;
	int rc;

	if (len > MANIFEST_FILE_MAX)
		return fail_here(&r, GPUQ_ELIMIT,
				 "%zu bytes, larger than the %u a manifest may have", len,
				 MANIFEST_FILE_MAX);
	while (i < len && buf[i] && strchr(" \t\r\n", buf[i]))
		i++;
	if (ends_with(r.name, ".json"))
		return parse_json(&r, buf, len, true, &not_json);
	if (i < len && (buf[i] == '{' || buf[i] == '[')) {
		rc = parse_json(&r, buf, len, false, &not_json);
		if (!not_json)
			return rc;
		r.doc = 0;
	}
	return parse_yaml(&r, buf, len);
}

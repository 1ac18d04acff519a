/* Unit tests for the manifest parser (manifest_parse): YAML
 * typing, documents and Lists, refusals, caps, callback errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "manifest/manifest.h"

typedef struct {
	json_t *docs; /* array of copies of every object seen */
	size_t last;  /* doc number of the last call */
	int fail_at;  /* return GPUQ_EINVAL on this call (1-based), 0 never */
	int calls;    /* calls so far */
} collect_t;

static int collect(void *ctx, size_t doc, const json_t *obj, gpuq_diag_t *diag)
{
	collect_t *c = ctx;

	c->last = doc;
	if (++c->calls == c->fail_at)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "refused by callback");
	json_array_append_new(c->docs, json_deep_copy(obj));
	return GPUQ_OK;
}

static int parse(const char *name, const char *text, collect_t *c, gpuq_diag_t *d)
{
	memset(d, 0, sizeof(*d));
	c->docs = json_array();
	c->calls = 0;
	return manifest_parse(name, text, strlen(text), collect, c, d);
}

/* ---- manifest parsing ---- */

static void parse_typing(void **state)
{
	collect_t c = {0};
	gpuq_diag_t d;
	const json_t *o;

	(void)state;
	assert_int_equal(parse("a.yaml",
			       "a: 8\nb: \"8\"\nc: 1.5\nd: true\ne: ~\nf: 0x10\ng: 0o17\nh: yes\n"
			       "i: 99999999999999999999\nj: 'null'\nk: -3\nl: 1e3\nm: !!str 5\n"
			       "n: .inf\no: 08\n",
			       &c, &d),
			 GPUQ_OK);
	assert_int_equal(json_array_size(c.docs), 1);
	o = json_array_get(c.docs, 0);
	assert_int_equal(json_integer_value(json_object_get(o, "a")), 8);
	assert_string_equal(json_string_value(json_object_get(o, "b")), "8");
	assert_true(json_is_real(json_object_get(o, "c")));
	assert_true(json_is_true(json_object_get(o, "d")));
	assert_true(json_is_null(json_object_get(o, "e")));
	assert_int_equal(json_integer_value(json_object_get(o, "f")), 16);
	assert_int_equal(json_integer_value(json_object_get(o, "g")), 15);
	assert_string_equal(json_string_value(json_object_get(o, "h")), "yes");
	assert_string_equal(json_string_value(json_object_get(o, "i")), "99999999999999999999");
	assert_string_equal(json_string_value(json_object_get(o, "j")), "null");
	assert_int_equal(json_integer_value(json_object_get(o, "k")), -3);
	assert_true(json_is_real(json_object_get(o, "l")));
	assert_string_equal(json_string_value(json_object_get(o, "m")), "5");
	assert_string_equal(json_string_value(json_object_get(o, "n")), ".inf");
	assert_int_equal(json_integer_value(json_object_get(o, "o")), 8);
	json_decref(c.docs);
}

static void parse_documents(void **state)
{
	collect_t c = {0};
	gpuq_diag_t d;

	(void)state;
	/* empty documents and comment-only documents are skipped */
	assert_int_equal(
	    parse("a.yaml", "# only a comment\n---\n---\na: 1\n---\nb: 2\n---\n", &c, &d), GPUQ_OK);
	assert_int_equal(json_array_size(c.docs), 2);
	assert_int_equal(c.last, 3); /* a comment alone starts no document */
	json_decref(c.docs);
	assert_int_equal(parse("a.yaml", "", &c, &d), GPUQ_OK);
	assert_int_equal(json_array_size(c.docs), 0);
	json_decref(c.docs);
	/* kind: List is unwrapped */
	assert_int_equal(
	    parse("a.yaml", "kind: List\napiVersion: v1\nitems:\n- a: 1\n- b: 2\n", &c, &d),
	    GPUQ_OK);
	assert_int_equal(json_array_size(c.docs), 2);
	json_decref(c.docs);
	/* JSON: an object, an array of objects, and a flow-style YAML map */
	assert_int_equal(parse("a.json", "{\"a\": 1.5, \"b\": [1, 2]}", &c, &d), GPUQ_OK);
	assert_int_equal(json_array_size(c.docs), 1);
	json_decref(c.docs);
	assert_int_equal(parse("a.json", "[{\"a\": 1}, {\"b\": 2}]", &c, &d), GPUQ_OK);
	assert_int_equal(json_array_size(c.docs), 2);
	json_decref(c.docs);
	assert_int_equal(parse("a.yaml", "{kind: Namespace, x: [a, b]}\n", &c, &d), GPUQ_OK);
	assert_string_equal(json_string_value(json_object_get(json_array_get(c.docs, 0), "kind")),
			    "Namespace");
	json_decref(c.docs);
}

typedef struct {
	const char *name; /* manifest name */
	const char *text; /* manifest */
	int rc;		  /* expected code */
	const char *msg;  /* expected diagnostic, exactly */
} bad_parse_t;

static const bad_parse_t BAD_PARSE[] = {
    {"a.yaml", "a: &x 1\nb: *x\n", GPUQ_EINVAL,
     "a.yaml: document 1: anchors (&x) are not supported"},
    {"a.yaml", "a: *x\n", GPUQ_EINVAL, "a.yaml: document 1: aliases (*x) are not supported"},
    {"a.yaml", "a:\n  <<: {b: 1}\n", GPUQ_EINVAL,
     "a.yaml: document 1: merge keys (<<) are not supported"},
    {"a.yaml", "a: 1\na: 2\n", GPUQ_EINVAL, "a.yaml: document 1: duplicate mapping key \"a\""},
    {"a.yaml", "? [a]\n: 1\n", GPUQ_EINVAL, "a.yaml: document 1: mapping keys must be scalars"},
    {"a.yaml", "a: b: c\n", GPUQ_EINVAL,
     "a.yaml: document 1: line 1 column 5: YAML syntax error: mapping values are not allowed "
     "in this context"},
    {"a.yaml", "a: 1\n---\n- 1\n- 2\n", GPUQ_EINVAL,
     "a.yaml: document 2: items[0]: an object must be a mapping, not a scalar"},
    {"a.yaml", "just a string\n", GPUQ_EINVAL,
     "a.yaml: document 1: an object must be a mapping, not a scalar"},
    {"a.yaml", "a: !!binary aGk=\n", GPUQ_EINVAL,
     "a.yaml: document 1: YAML tag tag:yaml.org,2002:binary is not supported"},
    {"a.yaml", "kind: List\nitems: 5\n", GPUQ_EINVAL,
     "a.yaml: document 1: List: items: must be a list"},
    {"a.json", "{\"a\": 1,}", GPUQ_EINVAL,
     "a.json: line 1 column 9: JSON syntax error: string or '}' expected near '}'"},
    {"a.json", "{\"a\": 1, \"a\": 2}", GPUQ_EINVAL,
     "a.json: line 1 column 12: JSON syntax error: duplicate object key near '\"a\"'"},
    {"a.yaml", "a: \"x\\0y\"\n", GPUQ_EINVAL, "a.yaml: document 1: a scalar contains a NUL byte"},
};

static void parse_refusals(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(BAD_PARSE) / sizeof(BAD_PARSE[0]); i++) {
		const bad_parse_t *b = &BAD_PARSE[i];
		collect_t c = {0};
		gpuq_diag_t d;
		int rc = parse(b->name, b->text, &c, &d);

		if (rc != b->rc || strcmp(d.msg, b->msg))
			print_error("case %zu: rc %d msg \"%s\"\n", i, rc, d.msg);
		assert_int_equal(rc, b->rc);
		assert_string_equal(d.msg, b->msg);
		json_decref(c.docs);
	}
}

static void parse_caps(void **state)
{
	collect_t c = {0};
	gpuq_diag_t d;
	char *big;
	size_t n;

	(void)state;
	/* nesting: 64 levels pass, 65 are refused ("a: " is the first level) */
	big = calloc(1, 1000);
	memcpy(big, "a: ", 3);
	for (n = 3; n < 3 + 64; n++)
		big[n] = '[';
	for (size_t i = 0; i < 64; i++)
		big[n++] = ']';
	assert_int_equal(parse("a.yaml", big, &c, &d), GPUQ_ELIMIT);
	assert_string_equal(d.msg, "a.yaml: document 1: nested deeper than 64 levels");
	json_decref(c.docs);
	memmove(big + 3, big + 4, strlen(big + 4) + 1); /* one '[' less */
	big[strlen(big) - 1] = '\0';			/* and one ']' */
	assert_int_equal(parse("a.yaml", big, &c, &d), GPUQ_OK);
	assert_int_equal(json_array_size(c.docs), 1);
	json_decref(c.docs);
	free(big);

	/* size */
	n = MANIFEST_FILE_MAX + 1;
	big = malloc(n + 1);
	memset(big, '#', n);
	big[n] = '\0';
	assert_int_equal(parse("a.yaml", big, &c, &d), GPUQ_ELIMIT);
	assert_string_equal(d.msg,
			    "a.yaml: 4194305 bytes, larger than the 4194304 a manifest may have");
	json_decref(c.docs);
	free(big);

	/* documents */
	big = malloc(10001 * 9 + 1);
	big[0] = '\0';
	for (size_t i = 0, off = 0; i < 10001; i++)
		off += (size_t)snprintf(big + off, 10, "---\na: 1\n");
	assert_int_equal(parse("a.yaml", big, &c, &d), GPUQ_ELIMIT);
	assert_string_equal(d.msg, "a.yaml: document 10001: more than 10000 documents");
	assert_int_equal(json_array_size(c.docs), 10000);
	json_decref(c.docs);
	free(big);
}

static void parse_callback_errors(void **state)
{
	collect_t c = {0};
	gpuq_diag_t d;

	(void)state;
	c.fail_at = 2;
	assert_int_equal(parse("x.yaml", "a: 1\n---\nb: 2\n", &c, &d), GPUQ_EINVAL);
	assert_string_equal(d.msg, "x.yaml: document 2: refused by callback");
	json_decref(c.docs);
	c.fail_at = 3;
	assert_int_equal(
	    parse("x.yaml", "a: 1\n---\nkind: List\nitems: [{a: 1}, {b: 2}]\n", &c, &d),
	    GPUQ_EINVAL);
	assert_string_equal(d.msg, "x.yaml: document 2: items[1]: refused by callback");
	json_decref(c.docs);
}

/* ---- bad objects: the exact message for each ---- */

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(parse_typing),	     cmocka_unit_test(parse_documents),
	    cmocka_unit_test(parse_refusals),	     cmocka_unit_test(parse_caps),
	    cmocka_unit_test(parse_callback_errors),
	};

	return cmocka_run_group_tests_name("manifest", tests, NULL, NULL);
}

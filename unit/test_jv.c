/* Unit tests for jv's string decoding: every escape, against jansson's
 * decoding of the same document (the refusals are test_webhook's
 * parse_errors_are_named); and jv_doc_parse_skipping's tree against the
 * whole parse's with the skipped members taken out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jv/jv.h"
#include "unit/jv_fixtures.h"

/* The string value of the JSON document s, decoded by jv. */
static void decode(const char *s, jv_doc_t *d)
{
	char err[128];

	if (jv_doc_parse(d, s, strlen(s), err, sizeof(err)) != 0)
		fail_msg("%s: %s", s, err);
	assert_true(jv_is(d->root, JV_STRING));
}

static void escapes_decode_as_jansson_does(void **state)
{
	static const char *const docs[] = {
	    "\"plain\"",
	    "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
	    "\"a\\nb\\tc\"",
	    "\"\\u0041\\u00e9\\u20ac\"",
	    "\"\\ud83d\\ude00 grin\"",
	    "\"caf\xc3\xa9 \\u00e9\"",
	    "\"\\u001f\\u007f\"",
	    "\"x\\\\\"",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(docs) / sizeof(*docs); i++) {
		jv_doc_t d;
		json_error_t je;
		json_t *j = json_loads(docs[i], JSON_DECODE_ANY, &je);

		assert_non_null(j);
		decode(docs[i], &d);
		if (d.root->len != json_string_length(j) ||
		    memcmp(d.root->s, json_string_value(j), d.root->len) != 0)
			fail_msg("doc %zu (%s): jv and jansson disagree", i, docs[i]);
		assert_int_equal(d.root->s[d.root->len], '\0');
		json_decref(j);
		jv_doc_free(&d);
	}
}

static void escapes_refused(void **state)
{
	static const char *const bad[] = {
	    "\"\\x\"", "\"\\u12\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"\\", "\"\\\0\""};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		jv_doc_t d;
		char err[128];
		size_t n = strlen(bad[i]) + (i == 5 ? 2 : 0);

		if (jv_doc_parse(&d, bad[i], n, err, sizeof(err)) == 0)
			fail_msg("doc %zu accepted", i);
		assert_null(d.root);
		jv_doc_free(&d);
	}
}

/* Strings of every length from 0 to 40 bytes with one byte that leaves the
 * plain path (an escape, UTF-8, a control character) at every position, as
 * a value and as a key, at the end of the text and before more: decoded as
 * jansson decodes them, or refused as jansson refuses them. */
static void strings_at_every_length_and_position(void **state)
{
	static const char *const odd[] = {"\\n", "\\u00e9", "\xc3\xa9", "\x01", "\\\"", "\xff"};
	char text[128], doc[160];

	(void)state;
	for (size_t n = 0; n <= 40; n++)
		for (size_t o = 0; o < sizeof(odd) / sizeof(*odd); o++)
			for (size_t at = 0; at <= n; at++)
				for (int shape = 0; shape < 2; shape++) {
					jv_doc_t d;
					json_error_t je;
					json_t *j;
					const jv_t *v;
					char err[128];
					int len, rc;

					memset(text, 'a', n);
					len = snprintf(text + at, sizeof(text) - at, "%s", odd[o]);
					memset(text + at + len, 'b', n - at);
					text[n + len] = '\0';
					len = snprintf(doc, sizeof(doc),
						       shape ? "{\"%s\":[\"%s\"]}" : "\"%s\"", text,
						       text);
					j = json_loadb(doc, (size_t)len, JSON_DECODE_ANY, &je);
					rc = jv_doc_parse(&d, doc, (size_t)len, err, sizeof(err));
					if (!j) {
						if (rc == GPUQ_OK)
							fail_msg("accepted %s", doc);
						jv_doc_free(&d);
						continue;
					}
					if (rc)
						fail_msg("%s: %s", doc, err);
					v = shape ? d.root->first : d.root;
					if (!shape && (v->len != json_string_length(j) ||
						       memcmp(v->s, json_string_value(j), v->len)))
						fail_msg("%s: jv and jansson disagree", doc);
					if (shape &&
					    (!jv_get(d.root, v->s) || strlen(v->s) != v->len ||
					     strcmp(jv_str(v->next->first), v->s) != 0))
						fail_msg("%s: key and value disagree", doc);
					json_decref(j);
					jv_doc_free(&d);
				}
}

/* A document is parsed in one pass when it is JSON within the caps; any
 * other is refused as the scan-first parse refused it: a depth or a count
 * over its cap is named even when a syntax error comes before it. */
static void refusals_are_the_scans(void **state)
{
	static const struct {
		const char *doc;
		int rc;
		const char *err;
	} cases[] = {
	    {"[[[[", GPUQ_EINVAL, "unexpected end of input at byte 4"},
	    {"[1,,2]", GPUQ_EINVAL, "unexpected character at byte 3"},
	    {"{\"a\" 1}", GPUQ_EINVAL, "expected ':' at byte 5"},
	    {"[1 2]", GPUQ_EINVAL, "expected ',' or ']' at byte 3"},
	    {"{1:2}", GPUQ_EINVAL, "expected a string key at byte 1"},
	    {"[] x", GPUQ_EINVAL, "data after the JSON value at byte 3"},
	    {"\"a\x01\"", GPUQ_EINVAL, "control character in string at byte 2"},
	};
	char err[128], *big;
	jv_doc_t d;
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		assert_int_equal(
		    jv_doc_parse(&d, cases[i].doc, strlen(cases[i].doc), err, sizeof(err)),
		    cases[i].rc);
		assert_string_equal(err, cases[i].err);
		assert_null(d.root);
	}
	/* the densest JSON: as many values as (len + 1) / 2 */
	assert_int_equal(jv_doc_parse(&d, "[1,1,1]", 7, err, sizeof(err)), GPUQ_OK);
	assert_int_equal(jv_count(d.root), 3);
	jv_doc_free(&d);
	/* 65 arrays deep after an error: the depth is named, not the error */
	big = malloc(4 * JV_VALUES_MAX);
	assert_non_null(big);
	n = (size_t)snprintf(big, 8, "[x");
	memset(big + n, '[', JV_DEPTH_MAX + 1);
	n += JV_DEPTH_MAX + 1;
	assert_int_equal(jv_doc_parse(&d, big, n, err, sizeof(err)), GPUQ_ELIMIT);
	assert_string_equal(err, "JSON nested deeper than 64 levels");
	/* more than JV_VALUES_MAX values after an error: the count is named */
	big[0] = 'x';
	big[1] = '[';
	for (n = 2; n < 2 + 2 * (size_t)JV_VALUES_MAX; n += 2)
		memcpy(big + n, "1,", 2);
	big[n - 1] = ']';
	assert_int_equal(jv_doc_parse(&d, big, n, err, sizeof(err)), GPUQ_ELIMIT);
	assert_string_equal(err, "more than 262144 JSON values");
	/* and without the error, the same count */
	assert_int_equal(jv_doc_parse(&d, big + 1, n - 1, err, sizeof(err)), GPUQ_ELIMIT);
	/* one value fewer parses */
	big[n - 3] = ']';
	assert_int_equal(jv_doc_parse(&d, big + 1, n - 3, err, sizeof(err)), GPUQ_OK);
	assert_int_equal(jv_count(d.root), JV_VALUES_MAX - 1);
	jv_doc_free(&d);
	free(big);
}

static const jv_key_t SKIP[] = {
    JV_KEY("env"), JV_KEY("command"), JV_KEY("managedFields"), {NULL, 0}};

/* Parse doc whole and skipping; the trees must agree. */
static void agree(const char *doc)
{
	jv_doc_t whole, lean;
	char err[128];

	if (jv_doc_parse(&whole, doc, strlen(doc), err, sizeof(err)))
		fail_msg("whole: %s: %s", doc, err);
	if (jv_doc_parse_skipping(&lean, doc, strlen(doc), SKIP, err, sizeof(err)))
		fail_msg("skipping: %s: %s", doc, err);
	if (!jv_fixture_same_but_skipped(whole.root, lean.root, SKIP))
		fail_msg("trees differ: %s", doc);
	jv_doc_free(&whole);
	jv_doc_free(&lean);
}

/* Skipped members at the start, middle and end of objects, alone, nested
 * in each other, with the same names holding scalars (kept), and values
 * whose strings hold brackets, quotes and backslashes at every offset
 * across the 64-byte chunks the skipper reads. */
static void skipping_leaves_out_only_the_named_members(void **state)
{
	static const char *const docs[] = {
	    "{\"env\":[1,2],\"a\":1}",
	    "{\"a\":1,\"env\":[1,2]}",
	    "{\"a\":1,\"env\":{\"x\":[]},\"b\":[true]}",
	    "{\"env\":[]}",
	    "{\"env\":{}, \"command\" : [\"sh\"] ,\"x\":null}",
	    "{\"env\":\"prod\",\"command\":7,\"managedFields\":null,\"z\":false}",
	    "[{\"env\":[{\"env\":[1]}]},{\"k\":{\"env\":[\"]\",\"}\",\"[\"]}}]",
	    "{\"labels\":{\"env\":\"prod\"},\"env\":[{\"name\":\"a\\\"]\\\\\",\"value\":"
	    "\"\\u00e9\"}]}",
	    "{\"managedFields\":[{\"f:spec\":{\"k:{\\\"name\\\":\\\"x\\\"}\":{}}}],\"spec\":{}}",
	};
	char text[200], doc[800];
	static const char *const odd[] = {"]", "}", "[", "{", "\\\"", "\\\\", "\\\\\\\""};

	(void)state;
	for (size_t i = 0; i < sizeof(docs) / sizeof(*docs); i++)
		agree(docs[i]);
	/* an odd piece at every offset of a string 0-130 bytes long, the
	   skipped value starting at every offset of its chunk */
	for (size_t n = 0; n <= 130; n += 13)
		for (size_t o = 0; o < sizeof(odd) / sizeof(*odd); o++)
			for (size_t at = 0; at <= n; at++)
				for (size_t pad = 0; pad < 64; pad += 7) {
					int len;

					memset(text, 'a', n);
					len = snprintf(text + at, sizeof(text) - at, "%s", odd[o]);
					memset(text + at + len, 'b', n - at);
					text[n + len] = '\0';
					snprintf(
					    doc, sizeof(doc),
					    "{\"p\":\"%.*s\",\"env\":[{\"v\":\"%s\"},[\"%s\"]],"
					    "\"after\":[\"%s\"]}",
					    (int)pad,
					    "..............................................."
					    "..................",
					    text, text, text);
					agree(doc);
				}
}

/* A skipped value is checked for its strings and brackets: unterminated or
 * unbalanced, it is refused as the whole parse refuses it (with the byte);
 * past the depth cap, as too deep. What it does not check (numbers, UTF-8,
 * commas, a bracket of the other kind) passes. */
static void skipping_refuses_what_it_checks(void **state)
{
	static const struct {
		const char *doc;
		int rc;
		const char *err;
	} cases[] = {
	    {"{\"env\":[1,2", GPUQ_EINVAL, "unexpected end of input at byte 11"},
	    {"{\"env\":[\"a]}", GPUQ_EINVAL, "unexpected end of input at byte 12"},
	    /* balanced by count: '}' closes the outer '[', the object never */
	    {"{\"env\":[[1]}", GPUQ_EINVAL, "unexpected end of input at byte 12"},
	    {"{\"env\":[1]]}", GPUQ_EINVAL, "expected ',' or '}' at byte 10"},
	    {"{\"env\":[1] \"a\":1}", GPUQ_EINVAL, "expected ',' or '}' at byte 11"},
	    {"{\"env\":[01,,\"\xff\",x,{]}}", GPUQ_OK, ""},
	};
	char err[128], big[256];
	jv_doc_t d;
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		int rc = jv_doc_parse_skipping(&d, cases[i].doc, strlen(cases[i].doc), SKIP, err,
					       sizeof(err));

		if (rc != cases[i].rc || strcmp(err, cases[i].err))
			fail_msg("%s: %d \"%s\"", cases[i].doc, rc, err);
		if (!rc)
			assert_int_equal(d.root->n, 0);
		jv_doc_free(&d);
	}
	/* 64 deep in all is the cap, skipped or not */
	for (int deep = 63; deep <= 64; deep++) {
		n = (size_t)snprintf(big, sizeof(big), "{\"env\":");
		memset(big + n, '[', (size_t)deep);
		memset(big + n + deep, ']', (size_t)deep);
		n += 2 * (size_t)deep;
		big[n++] = '}';
		assert_int_equal(jv_doc_parse_skipping(&d, big, n, SKIP, err, sizeof(err)),
				 deep == 63 ? GPUQ_OK : GPUQ_ELIMIT);
		jv_doc_free(&d);
	}
	assert_string_equal(err, "JSON nested deeper than 64 levels");
	/* a key the filter cannot hold is the caller's error, named */
	{
		static const jv_key_t bad[] = {
		    JV_KEY("env"), JV_KEY("a-key-of-thirty-two-bytes-long--"), {NULL, 0}};

		assert_int_equal(jv_doc_parse_skipping(&d, "{}", 2, bad, err, sizeof(err)),
				 GPUQ_EINVAL);
		assert_null(d.root);
		assert_non_null(strstr(err, "key 1 (\"a-key-of-thirty-two-bytes-long--\")"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(escapes_decode_as_jansson_does),
	    cmocka_unit_test(escapes_refused),
	    cmocka_unit_test(strings_at_every_length_and_position),
	    cmocka_unit_test(refusals_are_the_scans),
	    cmocka_unit_test(skipping_leaves_out_only_the_named_members),
	    cmocka_unit_test(skipping_refuses_what_it_checks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

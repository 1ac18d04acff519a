/* Unit tests for jv's string decoding: every escape, against jansson's
 * decoding of the same document (the refusals are test_webhook's
 * parse_errors_are_named). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>
#include <string.h>

#include "jv/jv.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(escapes_decode_as_jansson_does),
	    cmocka_unit_test(escapes_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

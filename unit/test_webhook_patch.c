/* Unit tests of the admission path's text builders (webhook/patch.c and
 * the queued warning): base64, JSON and pointer escaping, the JSON Patch
 * builder, warning cuts and the buffer's sticky cap. Split from
 * unit/test_webhook.c, which keeps the decisions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "webhook/admit_internal.h"
#include "webhook/webhook.h"

static void test_base64_vectors(void **state)
{
	static const char *const in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
	static const char *const out[] = {"",	      "Zg==",	  "Zm8=",    "Zm9v",
					  "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
	(void)state;
	for (size_t i = 0; i < sizeof(in) / sizeof(*in); i++) {
		webhook_buf_t b;

		webhook_buf_init(&b, NULL, 0, 1024);
		webhook_buf_put_base64(&b, in[i], strlen(in[i]));
		assert_int_equal(b.err, GPUQ_OK);
		assert_string_equal(b.p ? b.p : "", out[i]);
		webhook_buf_deinit(&b);
	}
}

static void test_json_escaping(void **state)
{
	static const struct {
		const char *in, *want;
	} t[] = {
	    {"plain", "\"plain\""},
	    {"a\"b", "\"a\\\"b\""},
	    {"back\\slash", "\"back\\\\slash\""},
	    {"nl\ntab\t", "\"nl\\ntab\\t\""},
	    {"\x01\x1f", "\"\\u0001\\u001f\""},
	    {"gpuq.dev/queue-name", "\"gpuq.dev/queue-name\""},
	    {"caf\xc3\xa9", "\"caf\xc3\xa9\""},
	};
	char stack[8];
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		webhook_buf_t b;

		webhook_buf_init(&b, stack, sizeof(stack), 1024); /* small: forces growth */
		webhook_buf_put_jstr(&b, t[i].in);
		assert_int_equal(b.err, GPUQ_OK);
		assert_string_equal(b.p, t[i].want);
		webhook_buf_deinit(&b);
	}
}

static void test_pointer_escaping(void **state)
{
	static const struct {
		const char *prefix, *token, *want_path;
	} t[] = {
	    {"/metadata/labels", "gpuq.dev/queue-name", "/metadata/labels/gpuq.dev~1queue-name"},
	    {"/metadata/labels", "a~b/c", "/metadata/labels/a~0b~1c"},
	    {"/x", "~1", "/x/~01"},
	    {"/spec", "suspend", "/spec/suspend"},
	    {"/spec/schedulingGates/-", NULL, "/spec/schedulingGates/-"},
	    {"/m", "quote\"d", "/m/quote\"d"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		webhook_patch_t p;
		json_t *arr;

		webhook_patch_init(&p, NULL, 0);
		webhook_patch_add(&p, t[i].prefix, t[i].token, "true");
		assert_int_equal(webhook_patch_finish(&p), GPUQ_OK);
		arr = json_loads(p.text.p, 0, NULL);
		assert_non_null(arr);
		assert_int_equal(json_array_size(arr), 1);
		assert_string_equal(
		    json_string_value(json_object_get(json_array_get(arr, 0), "path")),
		    t[i].want_path);
		assert_true(json_is_true(json_object_get(json_array_get(arr, 0), "value")));
		json_decref(arr);
		webhook_patch_deinit(&p);
	}
}

static void test_patch_builder(void **state)
{
	webhook_patch_t p;
	char stack[16];
	json_t *arr;
	(void)state;

	webhook_patch_init(&p, stack, sizeof(stack));
	assert_int_equal(webhook_patch_finish(&p), GPUQ_OK); /* no ops: no text */
	assert_int_equal(p.n_ops, 0);
	webhook_patch_add(&p, "/spec", "suspend", "true");
	webhook_patch_add(&p, "/metadata", "labels", "{\"gpuq.dev/queue-name\":\"default\"}");
	assert_int_equal(webhook_patch_finish(&p), GPUQ_OK);
	assert_int_equal(p.n_ops, 2);
	arr = json_loads(p.text.p, 0, NULL);
	assert_non_null(arr);
	assert_int_equal(json_array_size(arr), 2);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(json_array_get(arr, 1), "value"),
					      "gpuq.dev/queue-name")),
	    "default");
	json_decref(arr);
	webhook_patch_deinit(&p);
}

/* An op whose value is written in place (webhook_patch_open/close) is the
 * text webhook_patch_add writes for the same value, first op or later, and
 * a buffer's cap still holds through it. */
static void test_patch_open_close(void **state)
{
	webhook_patch_t a, b;
	webhook_buf_t *v;
	char stack[16];
	(void)state;

	webhook_patch_init(&a, NULL, 0);
	webhook_patch_init(&b, stack, sizeof(stack));
	for (int i = 0; i < 2; i++) {
		webhook_patch_add(&a, "/metadata/labels", "gpuq.dev/queue-name", "\"d\\\"q\"");
		v = webhook_patch_open(&b, "/metadata/labels", "gpuq.dev/queue-name");
		webhook_buf_put_jstr(v, "d\"q");
		webhook_patch_close(&b);
	}
	assert_int_equal(webhook_patch_finish(&a), GPUQ_OK);
	assert_int_equal(webhook_patch_finish(&b), GPUQ_OK);
	assert_int_equal(b.n_ops, 2);
	assert_string_equal(b.text.p, a.text.p);
	assert_string_equal(b.text.p,
			    "[{\"op\":\"add\",\"path\":\"/metadata/labels/gpuq.dev~1queue-name\","
			    "\"value\":\"d\\\"q\"},{\"op\":\"add\",\"path\":\"/metadata/"
			    "labels/gpuq.dev~1queue-name\",\"value\":\"d\\\"q\"}]");
	webhook_patch_deinit(&a);
	webhook_patch_deinit(&b);
}

/* The queued warning is "%.40s/%.40s: " and three parts, cut as snprintf
 * cuts at WEBHOOK_WARNING_MAX, and dropped past WEBHOOK_WARNINGS_MAX. */
static void test_warn_queued_cuts(void **state)
{
	static const char *const names[] = {"", "q", "a-name-of-exactly-forty-bytes-0123456789",
					    "a-name-over-forty-bytes-long-0123456789-and-more"};
	static const char *const tails[] = {"", "Job",
					    " created suspended until gpuq admits it "
					    "and this tail runs long enough to be cut"};
	webhook_review_t *r = calloc(1, sizeof(*r));
	(void)state;

	assert_non_null(r);
	for (size_t i = 0; i < 4; i++)
		for (size_t j = 0; j < 4; j++)
			for (size_t k = 0; k < 3; k++) {
				char want[WEBHOOK_WARNING_MAX];

				r->n_warnings = 0;
				r->ns = names[i];
				webhook_review_warn_queued(r, names[j], tails[k], tails[2 - k],
							   tails[k]);
				snprintf(want, sizeof(want), "queued in %.40s/%.40s: %s%s%s",
					 names[i], names[j], tails[k], tails[2 - k], tails[k]);
				assert_int_equal(r->n_warnings, 1);
				assert_string_equal(r->warnings[0], want);
			}
	r->n_warnings = WEBHOOK_WARNINGS_MAX;
	webhook_review_warn_queued(r, "q", "a", "b", "c");
	assert_int_equal(r->n_warnings, WEBHOOK_WARNINGS_MAX);
	free(r);
}

static void test_buffer_cap_is_sticky(void **state)
{
	webhook_buf_t b;
	(void)state;

	webhook_buf_init(&b, NULL, 0, 8);
	webhook_buf_puts(&b, "1234567");
	assert_int_equal(b.err, GPUQ_OK);
	webhook_buf_puts(&b, "8");
	assert_int_equal(b.err, GPUQ_ELIMIT);
	webhook_buf_puts(&b, "");
	assert_int_equal(b.err, GPUQ_ELIMIT);
	assert_string_equal(b.p, "1234567");
	webhook_buf_printf(&b, "%d", 5);
	assert_int_equal(b.len, 7);
	webhook_buf_deinit(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_base64_vectors),	 cmocka_unit_test(test_json_escaping),
	    cmocka_unit_test(test_pointer_escaping),	 cmocka_unit_test(test_patch_builder),
	    cmocka_unit_test(test_patch_open_close),	 cmocka_unit_test(test_warn_queued_cuts),
	    cmocka_unit_test(test_buffer_cap_is_sticky),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

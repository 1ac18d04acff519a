/* Unit tests for quota: quantities, resource lists, pod requests, LimitRange
 * defaulting and validation, extended-resource rules and ResourceQuota. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "quota/quota.h"

#define N(units, frac) ((__int128)(units)*1000000000 + (frac))

/* Parse a string the test knows to be valid. */
static quota_qty_t Q(const char *s)
{
	quota_qty_t q;
	gpuq_diag_t d;
	int rc = quota_qty_parse(s, strlen(s), &q, &d);

	if (rc)
		fail_msg("parse \"%s\": %s", s, d.msg);
	return q;
}

static const char *fmt(const quota_qty_t *q, char *buf)
{
	assert_int_equal(quota_qty_format(q, buf, QUOTA_QTY_FMT_MAX), GPUQ_OK);
	return buf;
}

/* ---- quantities ---- */

static const struct {
	const char *in;
	const char *canonical;
	__int128 nano;
	quota_qty_format_t format;
} valid_cases[] = {
    {"1.5", "1500m", N(1, 500000000), QUOTA_QTY_DECIMAL_SI},
    {"1.5Gi", "1536Mi", N(1610612736, 0), QUOTA_QTY_BINARY_SI},
    {"0.1", "100m", N(0, 100000000), QUOTA_QTY_DECIMAL_SI},
    /* apimachinery keeps the exponent family: 1e3 stays "1e3" (its own
     * String() tests: dec(1,3) DecimalExponent -> "1e3", 80e-3, 300e6). */
    {"1e3", "1e3", N(1000, 0), QUOTA_QTY_DECIMAL_EXP},
    {"1E3", "1e3", N(1000, 0), QUOTA_QTY_DECIMAL_EXP},
    {"1e+3", "1e3", N(1000, 0), QUOTA_QTY_DECIMAL_EXP},
    {"1e-3", "1e-3", N(0, 1000000), QUOTA_QTY_DECIMAL_EXP},
    {"0.08e0", "80e-3", N(0, 80000000), QUOTA_QTY_DECIMAL_EXP},
    {"1.5e3", "1500", N(1500, 0), QUOTA_QTY_DECIMAL_EXP},
    {"300e6", "300e6", N(300000000, 0), QUOTA_QTY_DECIMAL_EXP},
    {"1e-100", "1e-9", N(0, 1), QUOTA_QTY_DECIMAL_EXP},
    {"0e999999999999", "0", 0, QUOTA_QTY_DECIMAL_EXP},
    {"1000", "1k", N(1000, 0), QUOTA_QTY_DECIMAL_SI},
    {"1500", "1500", N(1500, 0), QUOTA_QTY_DECIMAL_SI},
    {"3000", "3k", N(3000, 0), QUOTA_QTY_DECIMAL_SI},
    {"1000M", "1G", N(1000000000, 0), QUOTA_QTY_DECIMAL_SI},
    {"1000000m", "1k", N(1000, 0), QUOTA_QTY_DECIMAL_SI},
    {"1024Ki", "1Mi", N(1048576, 0), QUOTA_QTY_BINARY_SI},
    {"1Ki", "1Ki", N(1024, 0), QUOTA_QTY_BINARY_SI},
    {"1025Ki", "1025Ki", N(1049600, 0), QUOTA_QTY_BINARY_SI},
    {"1.5Ki", "1536", N(1536, 0), QUOTA_QTY_BINARY_SI},
    {"0.5Ki", "512", N(512, 0), QUOTA_QTY_BINARY_SI},
    {".001Ki", "1024m", N(1, 24000000), QUOTA_QTY_BINARY_SI},
    {".000000001Ki", "1024n", N(0, 1024), QUOTA_QTY_DECIMAL_SI},
    {".000000000001Ki", "2n", N(0, 2), QUOTA_QTY_DECIMAL_SI},
    {"7Ei", "7Ei", (__int128)7 * ((__int128)1 << 60) * 1000000000, QUOTA_QTY_BINARY_SI},
    {"100m", "100m", N(0, 100000000), QUOTA_QTY_DECIMAL_SI},
    {".5", "500m", N(0, 500000000), QUOTA_QTY_DECIMAL_SI},
    {"5.", "5", N(5, 0), QUOTA_QTY_DECIMAL_SI},
    {"1.G", "1G", N(1000000000, 0), QUOTA_QTY_DECIMAL_SI},
    {"+1", "1", N(1, 0), QUOTA_QTY_DECIMAL_SI},
    {"-1", "-1", N(-1, 0), QUOTA_QTY_DECIMAL_SI},
    {"-1.5Gi", "-1536Mi", -N(1610612736, 0), QUOTA_QTY_BINARY_SI},
    {"1n", "1n", N(0, 1), QUOTA_QTY_DECIMAL_SI},
    {"1080n", "1080n", N(0, 1080), QUOTA_QTY_DECIMAL_SI},
    {"1u", "1u", N(0, 1000), QUOTA_QTY_DECIMAL_SI},
    {"0.0000000001", "1n", N(0, 1), QUOTA_QTY_DECIMAL_SI},
    {"0.0000000011", "2n", N(0, 2), QUOTA_QTY_DECIMAL_SI},
    {"-0.0000000001", "-1n", -N(0, 1), QUOTA_QTY_DECIMAL_SI},
    {"1.000000001", "1000000001n", N(1, 1), QUOTA_QTY_DECIMAL_SI},
    {"1E", "1E", N(1000000000000000000LL, 0), QUOTA_QTY_DECIMAL_SI},
    {"9223372036854775807", "9223372036854775807", N(INT64_MAX, 0), QUOTA_QTY_DECIMAL_SI},
    {"-9223372036854775807", "-9223372036854775807", -N(INT64_MAX, 0), QUOTA_QTY_DECIMAL_SI},
    {"0009223372036854775807.000", "9223372036854775807", N(INT64_MAX, 0), QUOTA_QTY_DECIMAL_SI},
    {"1610612736", "1610612736", N(1610612736, 0), QUOTA_QTY_DECIMAL_SI},
    {"0", "0", 0, QUOTA_QTY_DECIMAL_SI},
    {"-0", "0", 0, QUOTA_QTY_DECIMAL_SI},
    {"0Ki", "0", 0, QUOTA_QTY_DECIMAL_SI},
    {"000.000", "0", 0, QUOTA_QTY_DECIMAL_SI},
    {"8", "8", N(8, 0), QUOTA_QTY_DECIMAL_SI},
};

static void qty_parse_valid(void **state)
{
	char buf[QUOTA_QTY_FMT_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(valid_cases) / sizeof(valid_cases[0]); i++) {
		quota_qty_t q, again;
		gpuq_diag_t d = {""};
		const char *in = valid_cases[i].in;
		int rc = quota_qty_parse(in, strlen(in), &q, &d);

		if (rc)
			fail_msg("\"%s\": rc %d: %s", in, rc, d.msg);
		if (q.nano != valid_cases[i].nano)
			fail_msg("\"%s\": wrong value", in);
		if (q.format != valid_cases[i].format && q.nano != 0)
			fail_msg("\"%s\": format %d, want %d", in, q.format, valid_cases[i].format);
		fmt(&q, buf);
		if (strcmp(buf, valid_cases[i].canonical) != 0)
			fail_msg("\"%s\": canonical \"%s\", want \"%s\"", in, buf,
				 valid_cases[i].canonical);
		/* the canonical form is a fixed point */
		again = Q(buf);
		assert_true(again.nano == q.nano);
	}
}

static const struct {
	const char *in;
	int rc;
} invalid_cases[] = {
    {"8Ei", GPUQ_ERANGE},
    {"-8Ei", GPUQ_ERANGE},
    {"9223372036854775808", GPUQ_ERANGE},
    {"9223372036854775807.000000001", GPUQ_ERANGE},
    {"-9223372036854775808", GPUQ_ERANGE},
    {"10E", GPUQ_ERANGE},
    {"1e19", GPUQ_ERANGE},
    {"1e99999999999999999999", GPUQ_ERANGE},
    {"1.2.3", GPUQ_EINVAL},
    {"1Gb", GPUQ_EINVAL},
    {"", GPUQ_EINVAL},
    {"1 ", GPUQ_EINVAL},
    {" 1", GPUQ_EINVAL},
    {"e3", GPUQ_EINVAL},
    {"1e", GPUQ_EINVAL},
    {"1ee3", GPUQ_EINVAL},
    {"1e+", GPUQ_EINVAL},
    {"1e1.5", GPUQ_EINVAL},
    {"--1", GPUQ_EINVAL},
    {"+-1", GPUQ_EINVAL},
    {"Ki", GPUQ_EINVAL},
    {".", GPUQ_EINVAL},
    {"+", GPUQ_EINVAL},
    {"-", GPUQ_EINVAL},
    {"1.1.M", GPUQ_EINVAL},
    {"1+1.0M", GPUQ_EINVAL},
    {"0.1mi", GPUQ_EINVAL},
    {"0.1am", GPUQ_EINVAL},
    {"aoeu", GPUQ_EINVAL},
    {".5i", GPUQ_EINVAL},
    {"1i", GPUQ_EINVAL},
    {"-3.01i", GPUQ_EINVAL},
    {"-3.01e-", GPUQ_EINVAL},
    {"1K", GPUQ_EINVAL},
    {"1KiB", GPUQ_EINVAL},
    {"1..5", GPUQ_EINVAL},
    {"0x10", GPUQ_EINVAL},
    {"1,5", GPUQ_EINVAL},
    {"1e3k", GPUQ_EINVAL},
    {"12345678901234567890123456789012345678901234567890123456789012345", GPUQ_EINVAL},
};

static void qty_parse_invalid(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(invalid_cases) / sizeof(invalid_cases[0]); i++) {
		quota_qty_t q = {0, QUOTA_QTY_DECIMAL_SI};
		gpuq_diag_t d = {""};
		const char *in = invalid_cases[i].in;
		int rc = quota_qty_parse(in, strlen(in), &q, &d);

		if (rc != invalid_cases[i].rc)
			fail_msg("\"%s\": rc %d, want %d", in, rc, invalid_cases[i].rc);
		if (d.msg[0] == '\0')
			fail_msg("\"%s\": no diagnostic", in);
	}
}

static void qty_parse_diag_names_value(void **state)
{
	quota_qty_t q;
	gpuq_diag_t d;

	(void)state;
	assert_int_equal(quota_qty_parse("1Gb", 3, &q, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "\"1Gb\""));
	assert_int_equal(quota_qty_parse("8Ei", 3, &q, &d), GPUQ_ERANGE);
	assert_non_null(strstr(d.msg, "\"8Ei\""));
	/* the length bounds the parse: "12" read as "1" */
	assert_int_equal(quota_qty_parse("12", 1, &q, &d), GPUQ_OK);
	assert_true(q.nano == N(1, 0));
	/* an embedded NUL is not a digit */
	assert_int_equal(quota_qty_parse("1\0", 2, &q, &d), GPUQ_EINVAL);
	assert_int_equal(quota_qty_parse(NULL, 0, &q, NULL), GPUQ_EINVAL);
}

static void qty_equal_across_formats(void **state)
{
	quota_qty_t a = Q("1.5Gi"), b = Q("1536Mi"), c = Q("1610612736"), d = Q("1.610612736G");

	(void)state;
	assert_int_equal(quota_qty_cmp(&a, &b), 0);
	assert_int_equal(quota_qty_cmp(&b, &c), 0);
	assert_int_equal(quota_qty_cmp(&a, &c), 0);
	assert_int_equal(quota_qty_cmp(&a, &d), 0);
	a = Q("1"), b = Q("1001m");
	assert_int_equal(quota_qty_cmp(&a, &b), -1);
	assert_int_equal(quota_qty_cmp(&b, &a), 1);
	a = Q("-1"), b = Q("1n");
	assert_int_equal(quota_qty_cmp(&a, &b), -1);
}

static void qty_add_sub(void **state)
{
	char buf[QUOTA_QTY_FMT_MAX];
	quota_qty_t a = Q("1Gi"), b = Q("512Mi"), r, max = Q("9223372036854775807");
	quota_qty_t one = Q("1"), n1 = Q("1n");

	(void)state;
	assert_int_equal(quota_qty_add(&a, &b, &r), GPUQ_OK);
	assert_string_equal(fmt(&r, buf), "1536Mi");
	assert_int_equal(quota_qty_sub(&a, &b, &r), GPUQ_OK);
	assert_string_equal(fmt(&r, buf), "512Mi");
	assert_int_equal(quota_qty_sub(&b, &a, &r), GPUQ_OK);
	assert_string_equal(fmt(&r, buf), "-512Mi");
	a = Q("100m"), b = Q("1");
	assert_int_equal(quota_qty_add(&a, &b, &r), GPUQ_OK);
	assert_string_equal(fmt(&r, buf), "1100m");
	assert_int_equal(quota_qty_add(&max, &one, &r), GPUQ_ERANGE);
	assert_int_equal(quota_qty_add(&max, &n1, &r), GPUQ_ERANGE);
	r = quota_qty_from_units(-INT64_MAX, QUOTA_QTY_DECIMAL_SI);
	assert_int_equal(quota_qty_sub(&r, &one, &r), GPUQ_ERANGE);
	assert_int_equal(quota_qty_sub(&max, &max, &r), GPUQ_OK);
	assert_true(quota_qty_is_zero(&r));
}

static void qty_constructors_and_accessors(void **state)
{
	char buf[QUOTA_QTY_FMT_MAX];
	quota_qty_t q;

	(void)state;
	q = quota_qty_from_milli(1500);
	assert_string_equal(fmt(&q, buf), "1500m");
	q = quota_qty_from_milli(2000);
	assert_string_equal(fmt(&q, buf), "2");
	q = quota_qty_from_units(1024, QUOTA_QTY_BINARY_SI);
	assert_string_equal(fmt(&q, buf), "1Ki");
	q = quota_qty_from_units(5, QUOTA_QTY_BINARY_SI);
	assert_string_equal(fmt(&q, buf), "5");
	q = quota_qty_from_units(1000000, QUOTA_QTY_DECIMAL_EXP);
	assert_string_equal(fmt(&q, buf), "1e6");
	q = quota_qty_from_units(4, QUOTA_QTY_DECIMAL_SI);
	assert_string_equal(fmt(&q, buf), "4");
	q = quota_qty_from_units(INT64_MIN, QUOTA_QTY_DECIMAL_SI);
	assert_string_equal(fmt(&q, buf), "-9223372036854775807");

	q = Q("1.5");
	assert_int_equal(quota_qty_units(&q), 2);
	assert_int_equal(quota_qty_milli(&q), 1500);
	q = Q("-1.5");
	assert_int_equal(quota_qty_units(&q), -2);
	q = Q("1n");
	assert_int_equal(quota_qty_units(&q), 1);
	assert_int_equal(quota_qty_milli(&q), 1);
	q = Q("9223372036854775807");
	assert_int_equal(quota_qty_units(&q), INT64_MAX);
	assert_int_equal(quota_qty_milli(&q), INT64_MAX);
	q = Q("-9223372036854775807");
	assert_int_equal(quota_qty_milli(&q), -INT64_MAX);

	q = Q("2");
	assert_true(quota_qty_is_integer(&q));
	q = Q("1Ki");
	assert_true(quota_qty_is_integer(&q));
	q = Q("1.5");
	assert_false(quota_qty_is_integer(&q));
	q = Q("500m");
	assert_false(quota_qty_is_integer(&q));
	assert_false(quota_qty_is_zero(&q));
	q = Q("0Mi");
	assert_true(quota_qty_is_zero(&q));
	assert_true(quota_qty_is_integer(&q));

	q = Q("1.5");
	assert_int_equal(quota_qty_amount("cpu", &q), 1500);
	assert_int_equal(quota_qty_amount("nvidia.com/gpu", &q), 2);
	q = Q("1Ki");
	assert_int_equal(quota_qty_amount("memory", &q), 1024);
	q = Q("250m");
	assert_int_equal(quota_qty_amount("cpu", &q), 250);
}

static void qty_format_small_buffer(void **state)
{
	char buf[8];
	quota_qty_t q = Q("1536Mi");

	(void)state;
	assert_int_equal(quota_qty_format(&q, buf, 7), GPUQ_OK);
	assert_string_equal(buf, "1536Mi");
	assert_int_equal(quota_qty_format(&q, buf, 6), GPUQ_ELIMIT);
	q = Q("0");
	assert_int_equal(quota_qty_format(&q, buf, 1), GPUQ_ELIMIT);
	/* the longest canonical strings fit QUOTA_QTY_FMT_MAX */
	{
		char big[QUOTA_QTY_FMT_MAX];

		q = Q("-9223372036854775806.999999999");
		assert_int_equal(quota_qty_format(&q, big, sizeof(big)), GPUQ_OK);
		assert_string_equal(big, "-9223372036854775806999999999n");
	}
}

/* ---- resource lists ---- */

static void reslist_set_get_add(void **state)
{
	quota_reslist_t l = {0};
	quota_qty_t one = Q("1"), half = Q("500m");
	const quota_qty_t *got;
	char buf[QUOTA_QTY_FMT_MAX];

	(void)state;
	assert_null(quota_reslist_get(&l, "cpu"));
	assert_int_equal(quota_reslist_set(&l, "cpu", &one), GPUQ_OK);
	assert_int_equal(quota_reslist_add(&l, "cpu", &half), GPUQ_OK);
	got = quota_reslist_get(&l, "cpu");
	assert_non_null(got);
	assert_string_equal(fmt(got, buf), "1500m");
	assert_int_equal(quota_reslist_add(&l, "nvidia.com/gpu", &one), GPUQ_OK);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.items[1].name, "nvidia.com/gpu");
	assert_int_equal(quota_reslist_set(&l, "cpu", &half), GPUQ_OK);
	assert_int_equal(l.n, 2);
	assert_string_equal(fmt(quota_reslist_get(&l, "cpu"), buf), "500m");
	assert_string_equal(l.items[0].name, "cpu"); /* insertion order kept */
}

static void reslist_limits(void **state)
{
	quota_reslist_t l = {0};
	quota_qty_t one = Q("1"), max = Q("9223372036854775807");
	char name[QUOTA_RES_NAME_MAX + 1];

	(void)state;
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	assert_int_equal(quota_reslist_set(&l, name, &one), GPUQ_ELIMIT);
	name[QUOTA_RES_NAME_MAX - 1] = '\0'; /* 127 bytes: fits */
	assert_int_equal(quota_reslist_set(&l, name, &one), GPUQ_OK);
	assert_int_equal(quota_reslist_set(&l, "", &one), GPUQ_EINVAL);
	for (int i = 1; i < QUOTA_RESLIST_MAX; i++) {
		char n[16];

		snprintf(n, sizeof(n), "r%d", i);
		assert_int_equal(quota_reslist_add(&l, n, &one), GPUQ_OK);
	}
	assert_int_equal(l.n, QUOTA_RESLIST_MAX);
	assert_int_equal(quota_reslist_add(&l, "more", &one), GPUQ_ELIMIT);
	assert_int_equal(quota_reslist_set(&l, "r1", &max), GPUQ_OK); /* existing: fine */
	assert_int_equal(quota_reslist_add(&l, "r1", &one), GPUQ_ERANGE);
	assert_true(quota_reslist_get(&l, "r1")->nano == max.nano); /* unchanged */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(qty_parse_valid),
	    cmocka_unit_test(qty_parse_invalid),
	    cmocka_unit_test(qty_parse_diag_names_value),
	    cmocka_unit_test(qty_equal_across_formats),
	    cmocka_unit_test(qty_add_sub),
	    cmocka_unit_test(qty_constructors_and_accessors),
	    cmocka_unit_test(qty_format_small_buffer),
	    cmocka_unit_test(reslist_set_get_add),
	    cmocka_unit_test(reslist_limits),
	};

	return cmocka_run_group_tests_name("quota", tests, NULL, NULL);
}

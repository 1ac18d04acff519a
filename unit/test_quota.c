/* Unit tests for quota: quantities, resource lists, pod requests, LimitRange
 * defaulting and validation, extended-resource rules and ResourceQuota. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "quota/quota.h"
#include "unit/quota_fixtures.h"

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
    /* whole but not a multiple of 1024: digits without a suffix, as
     * apimachinery (its String() of dec(1025,0) BinarySI is "1025") */
    {"62.5Ki", "64000", N(64000, 0), QUOTA_QTY_BINARY_SI},
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
    /* no digits: apimachinery's scanner reads the mantissa as 0 */
    {"e3", "0", 0, QUOTA_QTY_DECIMAL_EXP},
    {"Ki", "0", 0, QUOTA_QTY_BINARY_SI},
    {"-Mi", "0", 0, QUOTA_QTY_BINARY_SI},
    {".", "0", 0, QUOTA_QTY_DECIMAL_SI},
    {"+", "0", 0, QUOTA_QTY_DECIMAL_SI},
    {"-", "0", 0, QUOTA_QTY_DECIMAL_SI},
    {"m", "0", 0, QUOTA_QTY_DECIMAL_SI},
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
		/* the canonical form parses back to the same value */
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
    {"1e", GPUQ_EINVAL},
    {"1ee3", GPUQ_EINVAL},
    {"1e+", GPUQ_EINVAL},
    {"1e1.5", GPUQ_EINVAL},
    {"--1", GPUQ_EINVAL},
    {"+-1", GPUQ_EINVAL},
    {"1.1.M", GPUQ_EINVAL},
    {"1+1.0M", GPUQ_EINVAL},
    {"0.1mi", GPUQ_EINVAL},
    /* suffix letters are looked up by byte: near misses and bytes past ASCII */
    {"1ki", GPUQ_EINVAL},
    {"1K", GPUQ_EINVAL},
    {"1Kj", GPUQ_EINVAL},
    {"1Mii", GPUQ_EINVAL},
    {"1\xc3\xa9", GPUQ_EINVAL},
    {"1\xcbi", GPUQ_EINVAL},
    {"1\xcb", GPUQ_EINVAL},
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
    {"e", GPUQ_EINVAL},
    {"-e", GPUQ_EINVAL},
    {"Kib", GPUQ_EINVAL},
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
	/* an empty value says what a quantity looks like */
	assert_int_equal(quota_qty_parse("", 0, &q, &d), GPUQ_EINVAL);
	assert_string_equal(d.msg, "invalid quantity \"\": empty (expected a number with an "
				   "optional suffix, e.g. 1, 500m, 2Gi)");
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
	assert_int_equal(quota_core_per_unit("cpu"), 1000); /* the one conversion */
	assert_int_equal(quota_core_per_unit("nvidia.com/gpu"), 1);
	assert_int_equal(quota_core_per_unit("memory"), 1);
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

/* Either side of 2^64 nano-units, where arithmetic leaves 64 bits for 128:
 * the same answers. */
static void qty_around_2_64_nano(void **state)
{
	static const struct {
		const char *in, *canon;
		int64_t units, milli;
		bool integer;
	} cases[] = {
	    {"18446744073.709551615", "18446744073709551615n", 18446744074, 18446744073710, false},
	    {"18446744073.709551616", "18446744073709551616n", 18446744074, 18446744073710, false},
	    {"-18446744073.709551617", "-18446744073709551617n", -18446744074, -18446744073710,
	     false},
	    {"18446744074", "18446744074", 18446744074, 18446744074000, true},
	    {"16Ei", NULL, 0, 0, false},
	    {"7Ei", "7Ei", 8070450532247928832, INT64_MAX, true},
	    {"-7Ei", "-7Ei", -8070450532247928832, -INT64_MAX, true},
	    {"1536Mi", "1536Mi", 1610612736, 1610612736000, true},
	};
	char buf[QUOTA_QTY_FMT_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		quota_qty_t q;
		int rc = quota_qty_parse(cases[i].in, strlen(cases[i].in), &q, NULL);

		if (!cases[i].canon) {
			assert_int_equal(rc, GPUQ_ERANGE);
			continue;
		}
		assert_int_equal(rc, GPUQ_OK);
		assert_string_equal(fmt(&q, buf), cases[i].canon);
		assert_true(quota_qty_units(&q) == cases[i].units);
		assert_true(quota_qty_milli(&q) == cases[i].milli);
		assert_int_equal(quota_qty_is_integer(&q), cases[i].integer);
	}
}

/* The common forms (digits and an SI suffix or none, read at once) and
 * their edges, where the full grammar takes over: as the apiserver reads
 * them (canonical text, format, or out of range). */
static void qty_plain_forms(void **state)
{
	static const struct {
		const char *in, *canon; /* canon NULL: GPUQ_ERANGE */
		quota_qty_format_t format;
	} cases[] = {
	    {"16", "16", QUOTA_QTY_DECIMAL_SI},
	    {"500m", "500m", QUOTA_QTY_DECIMAL_SI},
	    {"64Gi", "64Gi", QUOTA_QTY_BINARY_SI},
	    {"0Ki", "0", QUOTA_QTY_DECIMAL_SI},
	    {"007", "7", QUOTA_QTY_DECIMAL_SI},
	    {"1E", "1E", QUOTA_QTY_DECIMAL_SI},
	    {"1n", "1n", QUOTA_QTY_DECIMAL_SI},
	    {"1023Ki", "1023Ki", QUOTA_QTY_BINARY_SI},
	    {"1024Ki", "1Mi", QUOTA_QTY_BINARY_SI},
	    {"7Ei", "7Ei", QUOTA_QTY_BINARY_SI},
	    {"8Ei", NULL, QUOTA_QTY_DECIMAL_SI},
	    {"123456789012345m", "123456789012345m", QUOTA_QTY_DECIMAL_SI},
	    {"1234567890123456m", "1234567890123456m", QUOTA_QTY_DECIMAL_SI},
	    {"9223372036854775k", "9223372036854775k", QUOTA_QTY_DECIMAL_SI},
	    {"9223372036854776k", NULL, QUOTA_QTY_DECIMAL_SI},
	    {"999999999999999E", NULL, QUOTA_QTY_DECIMAL_SI},
	    {"9223372036854775807", "9223372036854775807", QUOTA_QTY_DECIMAL_SI},
	    {"9223372036854775808", NULL, QUOTA_QTY_DECIMAL_SI},
	};
	char buf[QUOTA_QTY_FMT_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		quota_qty_t q = {0, QUOTA_QTY_DECIMAL_SI};
		gpuq_diag_t d = {""};
		int rc = quota_qty_parse(cases[i].in, strlen(cases[i].in), &q, &d);

		if (!cases[i].canon) {
			if (rc != GPUQ_ERANGE || !strstr(d.msg, "out of range"))
				fail_msg("%s: rc %d \"%s\", want out of range", cases[i].in, rc,
					 d.msg);
			continue;
		}
		if (rc != GPUQ_OK || strcmp(fmt(&q, buf), cases[i].canon) != 0 ||
		    q.format != cases[i].format)
			fail_msg("%s: rc %d, \"%s\" format %d; want \"%s\" format %d", cases[i].in,
				 rc, rc ? "" : buf, (int)q.format, cases[i].canon,
				 (int)cases[i].format);
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

/* Names sharing a first byte (the lookup's quick test) are still told
 * apart, and a copy takes the used entries, on its own. */
static void reslist_lookup_and_copy(void **state)
{
	quota_reslist_t l = {0}, c;
	quota_qty_t one = Q("1"), two = Q("2"), three = Q("3");

	(void)state;
	assert_int_equal(quota_reslist_set(&l, "nvidia.com/gpu.shared", &one), GPUQ_OK);
	assert_int_equal(quota_reslist_set(&l, "nvidia.com/gpu", &two), GPUQ_OK);
	assert_int_equal(quota_reslist_set(&l, "memory", &three), GPUQ_OK);
	assert_null(quota_reslist_get(&l, "nvidia.com/gp"));
	assert_null(quota_reslist_get(&l, "mem"));
	assert_null(quota_reslist_get(&l, ""));
	assert_true(quota_reslist_get(&l, "nvidia.com/gpu")->nano == two.nano);
	assert_true(quota_reslist_get(&l, "nvidia.com/gpu.shared")->nano == one.nano);
	assert_int_equal(quota_reslist_add(&l, "nvidia.com/gpu", &one), GPUQ_OK);
	assert_true(quota_reslist_get(&l, "nvidia.com/gpu")->nano == three.nano);
	assert_int_equal(l.n, 3);
	memset(&c, 0xa5, sizeof(c));
	quota_reslist_copy(&c, &l);
	assert_int_equal(c.n, 3);
	assert_true(quota_reslist_same(&c, &l));
	assert_string_equal(c.items[2].name, "memory");
	assert_int_equal(quota_reslist_set(&c, "cpu", &one), GPUQ_OK);
	assert_int_equal(l.n, 3); /* the source is its own */
	assert_null(quota_reslist_get(&l, "cpu"));
	c.n = 0;
	quota_reslist_copy(&l, &c);
	assert_int_equal(l.n, 0);
}

/* ---- resource names and scaling ---- */

static void res_name_classes(void **state)
{
	static const struct {
		const char *name;
		bool native, extended;
	} cases[] = {
	    {"cpu", true, false},
	    {"memory", true, false},
	    {"ephemeral-storage", true, false},
	    {"hugepages-2Mi", true, false},
	    {"pods", true, false},
	    {"kubernetes.io/foo", true, false},
	    {"example.kubernetes.io/foo", true, false},
	    {"nvidia.com/gpu", false, true},
	    {"nvidia.com/mig-1g.5gb", false, true},
	    {"example.com/foo", false, true},
	    {"requests.nvidia.com/gpu", false, false},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (quota_res_is_native(cases[i].name) != cases[i].native)
			fail_msg("%s: native wrong", cases[i].name);
		if (quota_res_is_extended(cases[i].name) != cases[i].extended)
			fail_msg("%s: extended wrong", cases[i].name);
	}
}

static void reslist_scale_parallelism(void **state)
{
	quota_reslist_t l = L("nvidia.com/gpu=2,cpu=1500m,memory=1Gi");

	(void)state;
	assert_int_equal(quota_reslist_scale(&l, 4), GPUQ_OK);
	assert_list(&l, "nvidia.com/gpu=8,cpu=6,memory=4Gi");
	assert_int_equal(quota_reslist_scale(&l, -1), GPUQ_EINVAL);
	l = L("nvidia.com/gpu=2,cpu=9223372036854775807");
	assert_int_equal(quota_reslist_scale(&l, 2), GPUQ_ERANGE);
	assert_list(&l, "nvidia.com/gpu=2,cpu=9223372036854775807"); /* unchanged */
	assert_int_equal(quota_reslist_scale(&l, 0), GPUQ_OK);
	assert_list(&l, "nvidia.com/gpu=0,cpu=0");
}

/* ---- effective pod requests and limits ---- */

static const struct {
	const char *what;
	cspec_t c[MAXC];
	const char *overhead;
	const char *requests;
	const char *limits;
} pod_cases[] = {
    {"apps sum",
     {{"a", APP, "cpu=1,memory=1Gi", ""}, {"b", APP, "cpu=500m,memory=512Mi", ""}, {0}},
     "",
     "cpu=1500m,memory=1536Mi",
     ""},
    {"limit without request counts as request (GPU template)",
     {{"a", APP, "cpu=1", "nvidia.com/gpu=2,cpu=2"}, {0}},
     "",
     "cpu=1,nvidia.com/gpu=2",
     "nvidia.com/gpu=2,cpu=2"},
    {"init container larger than apps",
     {{"i", INIT, "cpu=4", ""}, {"a", APP, "cpu=1,memory=1Gi", ""}, {0}},
     "",
     "cpu=4,memory=1Gi",
     ""},
    {"sidecar adds to apps",
     {{"s", SIDE, "cpu=1", "cpu=1"}, {"a", APP, "cpu=2", "cpu=2"}, {0}},
     "",
     "cpu=3",
     "cpu=3"},
    {"init after sidecar carries it",
     {{"s", SIDE, "cpu=1", ""}, {"i", INIT, "cpu=3", ""}, {"a", APP, "cpu=2", ""}, {0}},
     "",
     "cpu=4",
     ""},
    {"init before sidecar does not",
     {{"i", INIT, "cpu=3", ""}, {"s", SIDE, "cpu=1", ""}, {"a", APP, "cpu=2", ""}, {0}},
     "",
     "cpu=3",
     ""},
    {"KEP-753 mix",
     {{"i1", INIT, "cpu=5", ""},
      {"s1", SIDE, "cpu=1", ""},
      {"i2", INIT, "cpu=2", ""},
      {"s2", SIDE, "cpu=1", ""},
      {"i3", INIT, "cpu=2500m", ""},
      {"a", APP, "cpu=1", ""},
      {0}},
     "",
     "cpu=5",
     ""},
    {"sidecars before a big init",
     {{"s1", SIDE, "nvidia.com/gpu=1", "nvidia.com/gpu=1"},
      {"s2", SIDE, "memory=1Gi", ""},
      {"i", INIT, "nvidia.com/gpu=2,memory=1Gi", "nvidia.com/gpu=2"},
      {"a", APP, "nvidia.com/gpu=1,memory=1Gi", "nvidia.com/gpu=1"},
      {0}},
     "",
     "nvidia.com/gpu=3,memory=2Gi",
     "nvidia.com/gpu=3"},
    {"overhead: added to requests, to non-zero limits only",
     {{"a", APP, "cpu=1,memory=1Gi", "cpu=2,ephemeral-storage=0"}, {0}},
     "cpu=250m,memory=64Mi,ephemeral-storage=1Gi",
     "cpu=1250m,memory=1088Mi,ephemeral-storage=1Gi",
     "cpu=2250m,ephemeral-storage=0"},
    {"no containers", {{0}}, "", "", ""},
};

static void pod_requests_and_limits(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(pod_cases) / sizeof(pod_cases[0]); i++) {
		quota_container_t store[MAXC];
		quota_pod_t p = P(store, pod_cases[i].c, pod_cases[i].overhead);
		quota_reslist_t r, l;

		print_message("# case: %s\n", pod_cases[i].what);
		assert_int_equal(quota_pod_requests(&p, &r), GPUQ_OK);
		assert_list(&r, pod_cases[i].requests);
		assert_int_equal(quota_pod_limits(&p, &l), GPUQ_OK);
		assert_list(&l, pod_cases[i].limits);
	}
}

static void container_requests_default_from_limits(void **state)
{
	quota_container_t c = C("a", APP, "cpu=500m", "cpu=1,nvidia.com/gpu=2,memory=1Gi");
	quota_reslist_t r;

	(void)state;
	assert_int_equal(quota_container_requests(&c, &r), GPUQ_OK);
	/* the user's request kept, limits fill the rest, in that order */
	assert_list(&r, "cpu=500m,nvidia.com/gpu=2,memory=1Gi");
	assert_string_equal(r.items[0].name, "cpu");
	assert_string_equal(r.items[1].name, "nvidia.com/gpu");
	c = C("b", APP, "", "");
	assert_int_equal(quota_container_requests(&c, &r), GPUQ_OK);
	assert_int_equal(r.n, 0);
}

static void pod_requests_errors(void **state)
{
	quota_container_t store[MAXC];
	static const cspec_t big[] = {
	    {"a", APP, "cpu=9223372036854775807", ""}, {"b", APP, "cpu=1", ""}, {0}};
	quota_pod_t p = P(store, big, "");
	quota_reslist_t r;

	(void)state;
	assert_int_equal(quota_pod_requests(&p, &r), GPUQ_ERANGE);
	/* 32 request names plus one more limit name do not fit one list */
	p = P(store, NULL, "");
	store[0] = C("a", APP, "", "x0=1");
	for (int k = 1; k <= QUOTA_RESLIST_MAX; k++) {
		char n[16];
		quota_qty_t one = Q("1");

		snprintf(n, sizeof(n), "r%d", k);
		assert_int_equal(quota_reslist_set(&store[0].requests, n, &one), GPUQ_OK);
	}
	p.n_containers = 1;
	assert_int_equal(quota_container_requests(&store[0], &r), GPUQ_ELIMIT);
	assert_int_equal(quota_pod_requests(&p, &r), GPUQ_ELIMIT);
}

/* ---- extended resources ---- */

static const struct {
	const char *what;
	cspec_t c[MAXC];
	int rc;
	const char *msg;
} ext_cases[] = {
    {"equal request and limit", {{"a", APP, "nvidia.com/gpu=2", "nvidia.com/gpu=2"}, {0}}, 0, ""},
    {"limit only", {{"a", APP, "", "nvidia.com/gpu=2"}, {0}}, 0, ""},
    {"native resources are not checked",
     {{"a", APP, "cpu=500m,memory=1.5Gi", "cpu=1"}, {0}},
     0,
     ""},
    {"request differs from limit",
     {{"train", APP, "nvidia.com/gpu=1", "nvidia.com/gpu=2"}, {0}},
     GPUQ_EDENIED,
     "spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: \"1\": must be "
     "equal to nvidia.com/gpu limit of 2 (container \"train\": extended resources cannot be "
     "overcommitted, set request and limit to the same value, or set only the limit)"},
    {"request without limit",
     {{"train", APP, "nvidia.com/gpu=1", ""}, {0}},
     GPUQ_EDENIED,
     "spec.containers[0].resources.limits: Required value: Limit must be set for non "
     "overcommitable resources (container \"train\" requests nvidia.com/gpu=1: set "
     "limits[nvidia.com/gpu] to 1 as well)"},
    {"fractional limit",
     {{"train", APP, "", "nvidia.com/mig-1g.5gb=500m"}, {0}},
     GPUQ_EDENIED,
     "spec.containers[0].resources.limits[nvidia.com/mig-1g.5gb]: Invalid value: \"500m\": "
     "must be an integer (container \"train\": extended resources are allocated in whole "
     "units, use e.g. 1)"},
    {"fractional request equal to limit, and an init container between app containers",
     {{"init0", INIT, "", ""},
      {"a", APP, "example.com/foo=1500m", "example.com/foo=1500m"},
      {"init", SIDE, "nvidia.com/gpu=2", "nvidia.com/gpu=1"},
      {"b", APP, "", "nvidia.com/gpu=1"},
      {"c", APP, "nvidia.com/gpu=3", "nvidia.com/gpu=4"},
      {0}},
     GPUQ_EDENIED,
     "spec.containers[0].resources.requests[example.com/foo]: Invalid value: \"1500m\": must "
     "be an integer (container \"a\": extended resources are allocated in whole units, use "
     "e.g. 2); spec.initContainers[1].resources.requests[nvidia.com/gpu]: Invalid value: "
     "\"2\": must be equal to nvidia.com/gpu limit of 1 (container \"init\": extended "
     "resources cannot be overcommitted, set request and limit to the same value, or set only "
     "the limit); spec.containers[2].resources.requests[nvidia.com/gpu]: Invalid value: \"3\": "
     "must be equal to nvidia.com/gpu limit of 4 (container \"c\": extended resources cannot "
     "be overcommitted, set request and limit to the same value, or set only the limit)"},
};

static void extended_rules(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(ext_cases) / sizeof(ext_cases[0]); i++) {
		quota_container_t store[MAXC];
		quota_pod_t p = P(store, ext_cases[i].c, "");
		gpuq_diag_t d = {""};
		int rc = quota_extended_validate(&p, "spec", &d);

		print_message("# case: %s\n", ext_cases[i].what);
		assert_int_equal(rc, ext_cases[i].rc);
		assert_string_equal(d.msg, ext_cases[i].msg);
	}
}

/* Without a spec field the paths start at the container list. */
static void extended_no_spec_field(void **state)
{
	static const cspec_t one[] = {{"x", INIT, "nvidia.com/gpu=1", "nvidia.com/gpu=2"}, {0}};
	quota_container_t store[MAXC];
	quota_pod_t p = P(store, one, "");
	gpuq_diag_t d = {""};
	(void)state;

	assert_int_equal(quota_extended_validate(&p, NULL, &d), GPUQ_EDENIED);
	assert_true(!strncmp(d.msg, "initContainers[0].resources.requests[nvidia.com/gpu]: ", 54));
}

/* A deep spec field (a JobSet's, a RayJob's worker group's) is named whole:
 * a 64-byte path buffer cut "...spec.containers[0" short (e2e/test_storm.sh). */
static void extended_deep_spec_field(void **state)
{
	static const cspec_t one[] = {{"m", APP, "nvidia.com/gpu=1", "nvidia.com/gpu=2"}, {0}};
	static const char *const fields[] = {
	    "spec.replicatedJobs[0].template.spec.template.spec",
	    "spec.rayClusterSpec.workerGroupSpecs[17].template.spec",
	};
	quota_container_t store[MAXC];
	quota_pod_t p = P(store, one, "");
	(void)state;

	for (size_t i = 0; i < sizeof(fields) / sizeof(*fields); i++) {
		gpuq_diag_t d = {""};
		char want[256];

		snprintf(want, sizeof(want),
			 "%s.containers[0].resources.requests[nvidia.com/gpu]: ", fields[i]);
		assert_int_equal(quota_extended_validate(&p, fields[i], &d), GPUQ_EDENIED);
		assert_true(!strncmp(d.msg, want, strlen(want)));
	}
}

/* ---- LimitRange defaulting ---- */

#define MAXI 3

typedef struct {
	quota_lr_type_t type;
	const char *min, *max, *def, *def_request, *max_ratio;
} ispec_t;

typedef struct {
	quota_lr_item_t items[MAXI];
	quota_limitrange_t lr;
} lr_store_t;

static const quota_limitrange_t *LR(lr_store_t *st, const char *name, const ispec_t *items,
				    size_t n)
{
	memset(st, 0, sizeof(*st));
	assert_true(n <= MAXI);
	gpuq_strlcpy(st->lr.name, name, sizeof(st->lr.name));
	gpuq_strlcpy(st->lr.namespace_, "team-a", sizeof(st->lr.namespace_));
	for (size_t i = 0; i < n; i++) {
		st->items[i].type = items[i].type;
		st->items[i].min = L(items[i].min ? items[i].min : "");
		st->items[i].max = L(items[i].max ? items[i].max : "");
		st->items[i].def = L(items[i].def ? items[i].def : "");
		st->items[i].def_request = L(items[i].def_request ? items[i].def_request : "");
		st->items[i].max_ratio = L(items[i].max_ratio ? items[i].max_ratio : "");
	}
	st->lr.items = st->items;
	st->lr.n_items = n;
	return &st->lr;
}

#define CT QUOTA_LR_CONTAINER
#define PT QUOTA_LR_POD

static const struct {
	const char *what;
	ispec_t r1[MAXI]; /* first LimitRange (type -1 ends) */
	ispec_t r2[MAXI]; /* second LimitRange */
	const char *req, *lim;
	const char *add_req, *add_lim;
} def_cases[] = {
    {"empty container gets default and defaultRequest",
     {{CT, NULL, NULL, "cpu=1,memory=1Gi", "cpu=500m", NULL}},
     {{0}},
     "",
     "",
     "cpu=500m,memory=1Gi",
     "cpu=1,memory=1Gi"},
    {"user limit becomes the request before defaultRequest applies",
     {{CT, NULL, NULL, "cpu=1", "cpu=500m", NULL}},
     {{0}},
     "",
     "cpu=4",
     "cpu=4",
     ""},
    {"user request kept, default limit still added",
     {{CT, NULL, NULL, "cpu=1", "cpu=500m", NULL}},
     {{0}},
     "cpu=2",
     "",
     "",
     "cpu=1"},
    {"max becomes default limit and request; min becomes default request",
     {{CT, "memory=256Mi", "nvidia.com/gpu=4", NULL, NULL, NULL}},
     {{0}},
     "",
     "",
     "nvidia.com/gpu=4,memory=256Mi",
     "nvidia.com/gpu=4"},
    {"GPU template with limit only, no ranges",
     {{0}},
     {{0}},
     "cpu=1",
     "nvidia.com/gpu=2",
     "nvidia.com/gpu=2",
     ""},
    {"later item in a range overrides an earlier one; Pod items do not default",
     {{CT, NULL, NULL, "cpu=1", "cpu=100m", NULL},
      {PT, NULL, "cpu=8", NULL, NULL, NULL},
      {CT, NULL, NULL, "cpu=2", "cpu=200m", NULL}},
     {{0}},
     "",
     "",
     "cpu=200m",
     "cpu=2"},
    {"first range wins over the second",
     {{CT, NULL, NULL, "cpu=1", "cpu=100m", NULL}},
     {{CT, NULL, NULL, "cpu=3,memory=2Gi", "cpu=300m", NULL}},
     "",
     "",
     "cpu=100m,memory=2Gi",
     "cpu=1,memory=2Gi"},
    {"everything already set: nothing to add",
     {{CT, NULL, NULL, "cpu=1", "cpu=100m", NULL}},
     {{0}},
     "cpu=2",
     "cpu=2",
     "",
     ""},
};

static size_t n_items(const ispec_t *it)
{
	size_t n = 0;

	while (n < MAXI &&
	       (it[n].min || it[n].max || it[n].def || it[n].def_request || it[n].max_ratio))
		n++;
	return n;
}

/* Apply additions to c (as the caller's patch would). */
static void apply(quota_container_t *c, const quota_reslist_t *add_req,
		  const quota_reslist_t *add_lim)
{
	for (size_t i = 0; i < add_req->n; i++) {
		assert_null(quota_reslist_get(&c->requests, add_req->items[i].name));
		assert_int_equal(
		    quota_reslist_set(&c->requests, add_req->items[i].name, &add_req->items[i].qty),
		    GPUQ_OK);
	}
	for (size_t i = 0; i < add_lim->n; i++) {
		assert_null(quota_reslist_get(&c->limits, add_lim->items[i].name));
		assert_int_equal(
		    quota_reslist_set(&c->limits, add_lim->items[i].name, &add_lim->items[i].qty),
		    GPUQ_OK);
	}
}

static void limitrange_defaulting(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(def_cases) / sizeof(def_cases[0]); i++) {
		lr_store_t s1, s2;
		const quota_limitrange_t *ranges[2];
		size_t n = 0, n1 = n_items(def_cases[i].r1), n2 = n_items(def_cases[i].r2);
		quota_container_t c = C("app", APP, def_cases[i].req, def_cases[i].lim);
		quota_reslist_t ar, al;

		print_message("# case: %s\n", def_cases[i].what);
		if (n1)
			ranges[n++] = LR(&s1, "lr1", def_cases[i].r1, n1);
		if (n2)
			ranges[n++] = LR(&s2, "lr2", def_cases[i].r2, n2);
		assert_int_equal(quota_limitrange_default(ranges, n, &c, &ar, &al), GPUQ_OK);
		assert_list(&ar, def_cases[i].add_req);
		assert_list(&al, def_cases[i].add_lim);
		/* idempotent: once applied, nothing more to add */
		apply(&c, &ar, &al);
		assert_int_equal(quota_limitrange_default(ranges, n, &c, &ar, &al), GPUQ_OK);
		assert_int_equal(ar.n, 0);
		assert_int_equal(al.n, 0);
	}
}

/* Random containers and ranges: additions never touch what the user set,
 * every limit ends with a request, and a second pass adds nothing. */
static void limitrange_defaulting_property(void **state)
{
	static const char *const names[] = {"cpu", "memory", "nvidia.com/gpu", "x.io/y"};
	uint64_t seed = 0x9e3779b97f4a7c15ULL;

	(void)state;
	for (int round = 0; round < 2000; round++) {
		lr_store_t st[2];
		const quota_limitrange_t *ranges[2] = {&st[0].lr, &st[1].lr};
		quota_container_t c;
		quota_reslist_t ar, al;

		memset(&c, 0, sizeof(c));
		memset(st, 0, sizeof(st));
		for (int r = 0; r < 2; r++) {
			st[r].lr.items = st[r].items;
			st[r].lr.n_items = MAXI;
			for (int it = 0; it < MAXI; it++) {
				quota_reslist_t *lists[] = {
				    &st[r].items[it].min, &st[r].items[it].max,
				    &st[r].items[it].def, &st[r].items[it].def_request};

				st[r].items[it].type = (seed >> 7) % 3 ? CT : PT;
				for (int k = 0; k < 4; k++) {
					seed =
					    seed * 6364136223846793005ULL + 1442695040888963407ULL;
					if ((seed >> 33) % 3 == 0) {
						quota_qty_t q = quota_qty_from_milli(
						    (int64_t)((seed >> 40) % 5000));

						quota_reslist_set(lists[(seed >> 20) % 4], names[k],
								  &q);
					}
				}
			}
		}
		for (int k = 0; k < 4; k++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			quota_qty_t q = quota_qty_from_units((int64_t)((seed >> 40) % 8), 0);

			if ((seed >> 33) % 4 == 0)
				quota_reslist_set(&c.requests, names[k], &q);
			if ((seed >> 35) % 4 == 0)
				quota_reslist_set(&c.limits, names[k], &q);
		}
		assert_int_equal(quota_limitrange_default(ranges, 2, &c, &ar, &al), GPUQ_OK);
		apply(&c, &ar, &al); /* asserts nothing user-set is overwritten */
		for (size_t i = 0; i < c.limits.n; i++)
			assert_non_null(quota_reslist_get(&c.requests, c.limits.items[i].name));
		assert_int_equal(quota_limitrange_default(ranges, 2, &c, &ar, &al), GPUQ_OK);
		assert_int_equal(ar.n + al.n, 0);
	}
}

/* ---- LimitRange validation ---- */

static const struct {
	const char *what;
	ispec_t r1[MAXI];
	ispec_t r2[MAXI];
	cspec_t c[MAXC];
	const char *overhead;
	int rc;
	const char *msg;
} val_cases[] = {
    {"GPU over the container max",
     {{CT, NULL, "nvidia.com/gpu=4", NULL, NULL, NULL}},
     {{0}},
     {{"a", APP, "nvidia.com/gpu=8", "nvidia.com/gpu=8"}, {0}},
     "",
     GPUQ_EDENIED,
     "maximum nvidia.com/gpu usage per Container is 4, but limit is 8"},
    {"pod below its memory min (canonical quantities)",
     {{PT, "memory=1Gi", NULL, NULL, NULL, NULL}},
     {{0}},
     {{"a", APP, "memory=256Mi", ""}, {"b", APP, "memory=268435456", ""}, {0}},
     "",
     GPUQ_EDENIED,
     "minimum memory usage per Pod is 1Gi, but request is 512Mi"},
    {"limit to request ratio",
     {{CT, NULL, NULL, NULL, NULL, "cpu=2"}},
     {{0}},
     {{"a", APP, "cpu=250m", "cpu=1"}, {0}},
     "",
     GPUQ_EDENIED,
     "cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000"},
    {"ratio within bounds",
     {{CT, NULL, NULL, NULL, NULL, "cpu=2"}},
     {{0}},
     {{"a", APP, "cpu=500m", "cpu=1"}, {0}},
     "",
     GPUQ_OK,
     ""},
    {"ratio with request 0",
     {{CT, NULL, NULL, NULL, NULL, "cpu=2"}},
     {{0}},
     {{"a", APP, "cpu=0", "cpu=1"}, {0}},
     "",
     GPUQ_EDENIED,
     "cpu max limit to request ratio per Container is 2, but no request is specified or request "
     "is 0"},
    {"ratio with no limit",
     {{PT, NULL, NULL, NULL, NULL, "memory=1500m"}},
     {{0}},
     {{"a", APP, "memory=1Gi", ""}, {0}},
     "",
     GPUQ_EDENIED,
     "memory max limit to request ratio per Pod is 1500m, but no limit is specified or limit is "
     "0"},
    {"max set, no limit given",
     {{CT, NULL, "cpu=2", NULL, NULL, NULL}},
     {{0}},
     {{"a", APP, "cpu=1", ""}, {0}},
     "",
     GPUQ_EDENIED,
     "maximum cpu usage per Container is 2.  No limit is specified"},
    {"min set, no request given",
     {{CT, "cpu=100m", NULL, NULL, NULL, NULL}},
     {{0}},
     {{"a", APP, "memory=1Gi", ""}, {0}},
     "",
     GPUQ_EDENIED,
     "minimum cpu usage per Container is 100m.  No request is specified"},
    {"request above max while the limit is within",
     {{CT, NULL, "cpu=2", NULL, NULL, NULL}},
     {{0}},
     {{"a", APP, "cpu=3", "cpu=2"}, {0}},
     "",
     GPUQ_EDENIED,
     "maximum cpu usage per Container is 2, but request is 3"},
    {"limit below min",
     {{CT, "memory=1Gi", NULL, NULL, NULL, NULL}},
     {{0}},
     {{"a", APP, "memory=1Gi", "memory=512Mi"}, {0}},
     "",
     GPUQ_EDENIED,
     "minimum memory usage per Container is 1Gi, but limit is 512Mi"},
    {"limit counts as request (defaulted)",
     {{CT, "cpu=100m", "cpu=2", NULL, NULL, NULL}},
     {{0}},
     {{"a", APP, "", "cpu=1"}, {0}},
     "",
     GPUQ_OK,
     ""},
    {"milli precision, rounded up",
     {{CT, "cpu=1500m", NULL, NULL, NULL, NULL}},
     {{0}},
     {{"a", APP, "cpu=1499500u", ""}, {0}},
     "",
     GPUQ_OK,
     ""},
    {"several violations: app before init, joined in brackets",
     {{CT, NULL, "cpu=2", NULL, NULL, NULL}, {PT, NULL, "nvidia.com/gpu=4", NULL, NULL, NULL}},
     {{0}},
     {{"init", INIT, "cpu=3", "cpu=3"},
      {"a", APP, "cpu=4,nvidia.com/gpu=8", "cpu=4,nvidia.com/gpu=8"},
      {"s", SIDE, "cpu=1", ""},
      {0}},
     "",
     GPUQ_EDENIED,
     "[maximum cpu usage per Container is 2, but limit is 4, maximum cpu usage per Container is "
     "2, but limit is 3, maximum cpu usage per Container is 2.  No limit is specified, maximum "
     "nvidia.com/gpu usage per Pod is 4, but limit is 8]"},
    {"the same violation twice is reported once, without brackets",
     {{CT, NULL, "nvidia.com/gpu=1", NULL, NULL, NULL}},
     {{0}},
     {{"a", APP, "", "nvidia.com/gpu=2"}, {"b", APP, "", "nvidia.com/gpu=2"}, {0}},
     "",
     GPUQ_EDENIED,
     "maximum nvidia.com/gpu usage per Container is 1, but limit is 2"},
    {"pod max ignores overhead",
     {{PT, NULL, "cpu=2", NULL, NULL, NULL}},
     {{0}},
     {{"a", APP, "cpu=2", "cpu=2"}, {0}},
     "cpu=1",
     GPUQ_OK,
     ""},
    {"pod max uses the sidecar formula",
     {{PT, NULL, "cpu=3", NULL, NULL, NULL}},
     {{0}},
     {{"s", SIDE, "cpu=1", "cpu=1"},
      {"i", INIT, "cpu=3", "cpu=3"},
      {"a", APP, "cpu=1", "cpu=1"},
      {0}},
     "",
     GPUQ_EDENIED,
     "maximum cpu usage per Pod is 3, but limit is 4"},
    {"the first range with a violation decides",
     {{CT, NULL, "cpu=8", NULL, NULL, NULL}},
     {{CT, NULL, "cpu=1", NULL, NULL, NULL}},
     {{"a", APP, "cpu=2", "cpu=2"}, {0}},
     "",
     GPUQ_EDENIED,
     "maximum cpu usage per Container is 1, but limit is 2"},
    {"PVC items are ignored",
     {{QUOTA_LR_OTHER, "storage=1Gi", NULL, NULL, NULL, NULL}},
     {{0}},
     {{"a", APP, "cpu=2", "cpu=2"}, {0}},
     "",
     GPUQ_OK,
     ""},
};

static void limitrange_validation(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(val_cases) / sizeof(val_cases[0]); i++) {
		lr_store_t s1, s2;
		const quota_limitrange_t *ranges[2];
		size_t n = 0, n1 = n_items(val_cases[i].r1), n2 = n_items(val_cases[i].r2);
		quota_container_t store[MAXC];
		quota_pod_t p = P(store, val_cases[i].c, val_cases[i].overhead);
		gpuq_diag_t d = {""};

		print_message("# case: %s\n", val_cases[i].what);
		if (n1)
			ranges[n++] = LR(&s1, "lr1", val_cases[i].r1, n1);
		if (n2)
			ranges[n++] = LR(&s2, "lr2", val_cases[i].r2, n2);
		assert_int_equal(quota_limitrange_validate(ranges, n, &p, &d), val_cases[i].rc);
		assert_string_equal(d.msg, val_cases[i].msg);
	}
}

/* Defaulting then validating a container that LimitRange defaults fully
 * passes that same LimitRange's min/max. */
static void limitrange_default_then_validate(void **state)
{
	static const ispec_t items[] = {
	    {CT, "cpu=100m", "cpu=2,nvidia.com/gpu=4", "cpu=1", "cpu=500m", "cpu=4"}};
	lr_store_t s;
	const quota_limitrange_t *r = LR(&s, "lr", items, 1);
	quota_container_t store[1];
	quota_pod_t p;
	quota_reslist_t ar, al;
	gpuq_diag_t d = {""};

	(void)state;
	memset(&p, 0, sizeof(p));
	store[0] = C("a", APP, "", "");
	p.containers = store;
	p.n_containers = 1;
	assert_int_equal(quota_limitrange_validate(&r, 1, &p, &d), GPUQ_EDENIED);
	assert_int_equal(quota_limitrange_default(&r, 1, &store[0], &ar, &al), GPUQ_OK);
	apply(&store[0], &ar, &al);
	assert_list(&store[0].requests, "cpu=500m,nvidia.com/gpu=4");
	assert_list(&store[0].limits, "cpu=1,nvidia.com/gpu=4");
	assert_int_equal(quota_limitrange_validate(&r, 1, &p, &d), GPUQ_OK);
}

/* quota_limitrange_validate_totals judges by, and gives, the pod's totals
 * without its overhead; its verdict is quota_limitrange_validate's. */
static void limitrange_validate_gives_totals(void **state)
{
	static const ispec_t items[] = {{PT, "", "cpu=8", "", "", ""}};
	static const cspec_t pod[] = {{"init", INIT, "cpu=1", "cpu=3"},
				      {"side", SIDE, "memory=1Gi", ""},
				      {"app", APP, "cpu=2", "cpu=2,nvidia.com/gpu=1"},
				      {NULL, APP, NULL, NULL}};
	lr_store_t s;
	const quota_limitrange_t *r = LR(&s, "lr", items, 1);
	quota_container_t store[MAXC];
	quota_pod_t p = P(store, pod, "cpu=250m,memory=64Mi");
	quota_pod_t bare = p;
	quota_reslist_t req, lim, want;
	gpuq_diag_t d = {""};

	(void)state;
	assert_int_equal(quota_limitrange_validate_totals(&r, 1, &p, &req, &lim, &d), GPUQ_OK);
	bare.overhead.n = 0;
	assert_int_equal(quota_pod_requests(&bare, &want), GPUQ_OK);
	assert_true(quota_reslist_same(&req, &want));
	assert_list(&req, "cpu=2,memory=1Gi,nvidia.com/gpu=1");
	assert_int_equal(quota_pod_limits(&bare, &want), GPUQ_OK);
	assert_true(quota_reslist_same(&lim, &want));
	assert_list(&lim, "cpu=3,nvidia.com/gpu=1");
	store[2].limits = L("cpu=9,nvidia.com/gpu=1");
	assert_int_equal(quota_limitrange_validate_totals(&r, 1, &p, &req, &lim, &d), GPUQ_EDENIED);
	assert_string_equal(d.msg, "maximum cpu usage per Pod is 8, but limit is 9");
	assert_list(&lim, "cpu=9,nvidia.com/gpu=1");
	assert_int_equal(quota_limitrange_validate(&r, 1, &p, &d), GPUQ_EDENIED);
	assert_string_equal(d.msg, "maximum cpu usage per Pod is 8, but limit is 9");
}

/* Amounts in explanations and status read as quantities. */
static void amounts_read_as_quantities(void **st)
{
	static const struct {
		const char *res;
		int64_t v;
		const char *want;
	} cases[] = {
	    {"cpu", 500, "500m"},
	    {"cpu", 2000, "2"},
	    {"cpu", 0, "0"},
	    {"memory", (int64_t)2 << 30, "2Gi"},
	    {"memory", (int64_t)1536 << 20, "1536Mi"},
	    {"memory", 1000, "1000"},
	    {"memory", 0, "0"},
	    {"hugepages-2Mi", (int64_t)4 << 20, "4Mi"},
	    {"nvidia.com/gpu", 8, "8"},
	    {"nvidia.com/gpu", (int64_t)1 << 40, "1099511627776"},
	    {"nvidia.com/gpu", -7, "-7"},
	    {"cpu", -1500, "-1500m"},
	    {"nvidia.com/gpu", INT64_MIN, "-9223372036854775808"},
	    {"nvidia.com/gpu", INT64_MAX, "9223372036854775807"},
	};
	char buf[32], cut[6], want[6];

	(void)st;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_string_equal(quota_amount_format(cases[i].res, cases[i].v, buf, sizeof(buf)),
				    cases[i].want);
		/* a short buffer is cut as snprintf cuts */
		snprintf(want, sizeof(want), "%s", cases[i].want);
		assert_string_equal(quota_amount_format(cases[i].res, cases[i].v, cut, sizeof(cut)),
				    want);
	}
}

/* The one "can this ever fit" rule (the webhook's and the core's). */
static void max_fit_rule(void **st)
{
	(void)st;
	/* a ClusterQueue alone: its nominal quota */
	quota_node_t alone[] = {{8, 0, -1, -1}};
	/* in a flat cohort whose other members lend 100 */
	quota_node_t flat[] = {{8, 0, -1, -1}, {108, 0, -1, -1}};
	/* team (nominal 4) <- dept (own 10, lendingLimit 5) <- org (another
	 * dept lends 20) */
	quota_node_t tree[] = {{4, 0, -1, -1}, {14, 0, -1, 5}, {25, 0, -1, -1}};

	(void)st;
	assert_int_equal(quota_tree_potential(alone, 1), 8);
	assert_int_equal(quota_tree_potential(flat, 2), 108); /* all the others lend */
	flat[0].borrowing_limit = 10;
	assert_int_equal(quota_tree_potential(flat, 2), 18); /* borrowingLimit caps */
	flat[0].borrowing_limit = 200;
	assert_int_equal(quota_tree_potential(flat, 2), 108); /* lent caps */
	flat[0] = (quota_node_t){0, 0, 0, -1};
	flat[1].sub = 100;
	assert_int_equal(quota_tree_potential(flat, 2), 0); /* may not borrow */
	flat[0] = (quota_node_t){8, 0, -1, 2};		    /* lends 2, keeps 6 */
	flat[1].sub = 102;
	assert_int_equal(quota_tree_potential(flat, 2), 108);
	/* the dept keeps 9 for its subtree and the org offers 25 */
	assert_int_equal(quota_tree_potential(tree, 3), 34);
	tree[1].borrowing_limit = 3; /* the dept may take 3 beyond its 14 */
	assert_int_equal(quota_tree_potential(tree, 3), 17);
	tree[1].borrowing_limit = -1;
	/* usage: the team uses 4 (its own), the dept 9 more than it keeps... */
	tree[0].use = 4;
	tree[1].use = 12;     /* the team's 4 and a sibling's 8: 3 above its 9 */
	tree[2].use = 3 + 15; /* the other dept uses 15 of the org */
	assert_int_equal(quota_tree_available(tree, 3), 0 + 0 + 7);
	tree[1].borrowing_limit = 2; /* stored 5, used 3 there: 4 more at most */
	assert_int_equal(quota_tree_available(tree, 3), 4);
	flat[0] = (quota_node_t){8, 5, -1, -1};
	flat[1] = (quota_node_t){108, 50, -1, -1};
	assert_int_equal(quota_tree_available(flat, 2), 58);
	assert_int_equal(quota_tree_available(alone, 1), 8);
	flat[0] = (quota_node_t){INT64_MAX - 1, 0, -1, INT64_MAX - 10};
	flat[1] = (quota_node_t){INT64_MAX, 0, -1, -1};
	assert_int_equal(quota_tree_potential(flat, 2), INT64_MAX); /* saturates */
	flat[0] = (quota_node_t){4, 0, INT64_MAX, -1};
	flat[1] = (quota_node_t){7, 0, -1, -1};
	assert_int_equal(quota_tree_potential(flat, 2), 7);
}

/* The one "lent": in each group what its members borrow is shared among
 * those that could lend, by what each could lend; groups apart, the
 * caller's slots carried through the sort. */
static void lent_shared_in_groups(void **state)
{
	quota_lend_t v[] = {
	    {.group = 7, .slot = 0, .nominal = 8, .usage = 10, .lending = -1}, /* borrows 2 */
	    {.group = 3, .slot = 1, .nominal = 4, .usage = 0, .lending = -1},  /* alone: 0 */
	    {.group = 7, .slot = 2, .nominal = 4, .usage = 1, .lending = -1},  /* could lend 3 */
	    {.group = 7, .slot = 3, .nominal = 4, .usage = 0, .lending = 1},   /* could lend 1 */
	};
	double want[4] = {0, 0, 1.5, 0.5};

	(void)state;
	quota_lent_share(v, 4);
	for (size_t k = 0; k < 4; k++)
		assert_true(v[k].lent == want[v[k].slot]);
	assert_int_equal(v[0].group, 3); /* sorted by group */
	quota_lent_share(v, 0);		 /* nothing to share */
}

/* Two lists the same: the same names with equal quantities, in any order
 * ("1" and "1000m" are equal); a name more or less, or another quantity,
 * is not the same. */
static void reslist_same_ignores_order(void **state)
{
	quota_reslist_t a = {0}, b = {0};
	quota_qty_t one, milli, two;

	(void)state;
	assert_int_equal(quota_qty_parse("1", 1, &one, NULL), GPUQ_OK);
	assert_int_equal(quota_qty_parse("1000m", 5, &milli, NULL), GPUQ_OK);
	assert_int_equal(quota_qty_parse("2", 1, &two, NULL), GPUQ_OK);
	assert_true(quota_reslist_same(&a, &b));
	assert_int_equal(quota_reslist_set(&a, "cpu", &one), GPUQ_OK);
	assert_int_equal(quota_reslist_set(&a, "memory", &two), GPUQ_OK);
	assert_false(quota_reslist_same(&a, &b));
	assert_int_equal(quota_reslist_set(&b, "memory", &two), GPUQ_OK);
	assert_int_equal(quota_reslist_set(&b, "cpu", &milli), GPUQ_OK);
	assert_true(quota_reslist_same(&a, &b));
	assert_int_equal(quota_reslist_set(&b, "cpu", &two), GPUQ_OK);
	assert_false(quota_reslist_same(&a, &b));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(qty_parse_valid),
	    cmocka_unit_test(reslist_same_ignores_order),
	    cmocka_unit_test(qty_parse_invalid),
	    cmocka_unit_test(qty_parse_diag_names_value),
	    cmocka_unit_test(qty_equal_across_formats),
	    cmocka_unit_test(qty_add_sub),
	    cmocka_unit_test(qty_constructors_and_accessors),
	    cmocka_unit_test(qty_format_small_buffer),
	    cmocka_unit_test(qty_around_2_64_nano),
	    cmocka_unit_test(qty_plain_forms),
	    cmocka_unit_test(reslist_set_get_add),
	    cmocka_unit_test(reslist_limits),
	    cmocka_unit_test(reslist_lookup_and_copy),
	    cmocka_unit_test(res_name_classes),
	    cmocka_unit_test(reslist_scale_parallelism),
	    cmocka_unit_test(pod_requests_and_limits),
	    cmocka_unit_test(container_requests_default_from_limits),
	    cmocka_unit_test(pod_requests_errors),
	    cmocka_unit_test(extended_rules),
	    cmocka_unit_test(extended_deep_spec_field),
	    cmocka_unit_test(extended_no_spec_field),
	    cmocka_unit_test(limitrange_defaulting),
	    cmocka_unit_test(limitrange_defaulting_property),
	    cmocka_unit_test(limitrange_validation),
	    cmocka_unit_test(limitrange_default_then_validate),
	    cmocka_unit_test(limitrange_validate_gives_totals),
	    cmocka_unit_test(amounts_read_as_quantities),
	    cmocka_unit_test(max_fit_rule),
	    cmocka_unit_test(lent_shared_in_groups),
	};

	return cmocka_run_group_tests_name("quota", tests, NULL, NULL);
}

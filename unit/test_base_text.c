/* Unit tests for base/text.c and the 32-bit FNV: RFC 3339 times read and
 * written, JSON strings written (the one of each that replaced kube/'s and
 * workload/'s parsers, six formatters and three escapers; issue 34). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

static void time_parse_accepts(void **state)
{
	static const struct {
		const char *s;
		int64_t ms;
	} good[] = {
	    {"2026-11-23T10:00:00Z", 1795428000000},
	    {"2026-11-23t10:00:00z", 1795428000000},
	    {"2026-11-23T10:00:00.5Z", 1795428000500},
	    {"2026-11-23T10:00:00.123456Z", 1795428000123},
	    {"2026-11-23T10:00:00.123456789Z", 1795428000123},
	    /* RFC 3339's 1*DIGIT: any length, cut (Go's time.Parse reads it) */
	    {"2026-11-23T10:00:00.1234567890123Z", 1795428000123},
	    {"2026-11-23T10:00:00.999999Z", 1795428000999},
	    {"2026-11-23T12:00:00+02:00", 1795428000000},
	    {"2026-11-23T15:30:00+05:30", 1795428000000},
	    {"2026-11-23T04:30:00-05:30", 1795428000000},
	    {"2026-11-23T10:00:00.250+00:00", 1795428000250},
	    {"2026-11-23T10:00:00-00:00", 1795428000000},
	    {"2026-11-24T09:59:00+23:59", 1795428000000},
	    {"2024-02-29T12:30:15Z", 1709209815000}, /* a leap year */
	    {"2000-02-29T00:00:00Z", 951782400000},  /* divisible by 400: leap */
	    {"2000-03-01T00:00:00Z", 951868800000},
	    {"2000-01-01T00:00:00Z", 946684800000},
	    {"1970-01-01T00:00:00Z", 0},
	    {"1969-12-31T23:59:59.500Z", -500},
	    {"2016-12-31T23:59:60Z", 1483228800000}, /* a leap second: the next minute */
	    {"0000-01-01T00:00:00Z", GPUQ_TIME_MIN_MS},
	    {"9999-12-31T23:59:59.999Z", GPUQ_TIME_MAX_MS},
	};
	int64_t ms;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ms = -1;
		if (gpuq_time_parse(good[i].s, &ms) != GPUQ_OK || ms != good[i].ms)
			fail_msg("%s: got %lld, want %lld", good[i].s, (long long)ms,
				 (long long)good[i].ms);
	}
}

static void time_parse_refuses(void **state)
{
	static const char *const bad[] = {
	    "",
	    "yesterday",
	    "2026-11-23",
	    "2026-11-23T10:00Z",
	    "2026-11-23 10:00:00Z",
	    "2026-11-23T10:00:00",
	    "2026-11-23T10:00:00.Z",
	    "2026-11-23T10:00:00.",
	    "2026-11-23T10:00:00+0200",
	    "2026-11-23T10:00:00+02",
	    "2026-11-23T10:00:00+02:00x",
	    "2026-11-23T10:00:00+24:00",
	    "2026-11-23T10:00:00+02:60",
	    "2026-11-23T10:00:00Zjunk",
	    "2026-11-23T10:00:00ZZ",
	    "2026-1a-23T10:00:00Z",
	    "2026-00-10T10:00:00Z",
	    "2026-13-01T00:00:00Z",
	    "2026-11-00T00:00:00Z",
	    "2026-11-31T00:00:00Z", /* November has 30 days */
	    "2024-02-30T00:00:00Z", /* not even in a leap year */
	    "2026-02-29T00:00:00Z", /* 2026 is not a leap year */
	    "1900-02-29T00:00:00Z", /* divisible by 100, not 400: not leap */
	    "2026-04-31T00:00:00Z",
	    "2026-11-23T24:00:00Z",
	    "2026-11-23T23:60:00Z",
	    "2026-11-23T23:59:61Z",
	    "-026-11-23T10:00:00Z",
	    "+2026-11-23T10:00:00Z",
	    "2026/11/23T10:00:00Z",
	    "2026-11-23T10:00:00.5",
	    " 2026-11-23T10:00:00Z",
	};
	int64_t ms = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (gpuq_time_parse(bad[i], &ms) != GPUQ_EINVAL)
			fail_msg("%s: accepted", bad[i]);
	assert_int_equal(ms, 42); /* untouched on a refusal */
	assert_int_equal(gpuq_time_parse(NULL, &ms), GPUQ_EINVAL);
}

static void time_civil_fields(void **state)
{
	int64_t ms;

	(void)state;
	assert_int_equal(gpuq_days_in_month(2024, 2), 29);
	assert_int_equal(gpuq_days_in_month(2023, 2), 28);
	assert_int_equal(gpuq_days_in_month(1900, 2), 28);
	assert_int_equal(gpuq_days_in_month(2000, 2), 29);
	assert_int_equal(gpuq_days_in_month(2026, 4), 30);
	assert_int_equal(gpuq_days_in_month(2026, 12), 31);
	assert_int_equal(gpuq_days_in_month(2026, 0), 0);
	assert_int_equal(gpuq_days_in_month(2026, 13), 0);
	assert_int_equal(gpuq_time_from_civil(2026, 11, 23, 10, 0, 0, &ms), GPUQ_OK);
	assert_int_equal(ms, 1795428000000);
	assert_int_equal(gpuq_time_from_civil(2024, 2, 30, 0, 0, 0, &ms), GPUQ_EINVAL);
	assert_int_equal(gpuq_time_from_civil(10000, 1, 1, 0, 0, 0, &ms), GPUQ_EINVAL);
	assert_int_equal(gpuq_time_from_civil(-1, 1, 1, 0, 0, 0, &ms), GPUQ_EINVAL);
	assert_int_equal(gpuq_time_from_civil(2026, 1, 1, -1, 0, 0, &ms), GPUQ_EINVAL);
	assert_int_equal(gpuq_time_from_civil(2026, 1, 1, 0, 0, 61, &ms), GPUQ_EINVAL);
}

static void time_format_forms(void **state)
{
	static const struct {
		int64_t ms;
		gpuq_time_form_t form;
		const char *s;
	} cases[] = {
	    {0, GPUQ_TIME_MICROS, "1970-01-01T00:00:00.000000Z"},
	    {1795428000123, GPUQ_TIME_MICROS, "2026-11-23T10:00:00.123000Z"},
	    {1709209815999, GPUQ_TIME_MICROS, "2024-02-29T12:30:15.999000Z"},
	    {-1, GPUQ_TIME_MICROS, "1969-12-31T23:59:59.999000Z"},
	    {-1000, GPUQ_TIME_MICROS, "1969-12-31T23:59:59.000000Z"},
	    {-1001, GPUQ_TIME_MICROS, "1969-12-31T23:59:58.999000Z"},
	    {1795428000123, GPUQ_TIME_MILLIS, "2026-11-23T10:00:00.123Z"},
	    {1795428000999, GPUQ_TIME_SECONDS, "2026-11-23T10:00:00Z"},
	    {1795428000123, GPUQ_TIME_BASIC, "20261123T100000Z"},
	    {951782400000, GPUQ_TIME_SECONDS, "2000-02-29T00:00:00Z"},
	    {GPUQ_TIME_MIN_MS, GPUQ_TIME_MILLIS, "0000-01-01T00:00:00.000Z"},
	    {GPUQ_TIME_MAX_MS, GPUQ_TIME_MILLIS, "9999-12-31T23:59:59.999Z"},
	    {GPUQ_TIME_MAX_MS + 1, GPUQ_TIME_SECONDS, ""}, /* a fifth digit: nothing */
	    {GPUQ_TIME_MIN_MS - 1, GPUQ_TIME_SECONDS, ""},
	};
	char out[GPUQ_TIME_TEXT_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = gpuq_time_format(cases[i].ms, cases[i].form, out, sizeof(out));

		assert_string_equal(out, cases[i].s);
		assert_int_equal(n, strlen(cases[i].s));
	}
	/* too small a buffer gives "", never a cut time; cap 0 writes nothing */
	memset(out, 'z', sizeof(out));
	assert_int_equal(gpuq_time_format(1795428000123, GPUQ_TIME_MICROS, out, 10), 0);
	assert_string_equal(out, "");
	assert_int_equal(gpuq_time_format(1795428000123, GPUQ_TIME_MICROS, out, 27), 0);
	assert_string_equal(out, "");
	assert_int_equal(gpuq_time_format(1795428000123, GPUQ_TIME_MICROS, out, 28), 27);
	out[0] = 'z';
	gpuq_time_format(0, GPUQ_TIME_SECONDS, out, 0);
	assert_int_equal(out[0], 'z');
}

static void time_round_trips(void **state)
{
	static const gpuq_time_form_t forms[] = {GPUQ_TIME_MILLIS, GPUQ_TIME_MICROS};
	char out[GPUQ_TIME_TEXT_MAX];
	uint64_t x = 88172645463325252ull;
	int64_t back;

	(void)state;
	/* random times over the whole range written round-trip */
	for (int i = 0; i < 4000; i++) {
		int64_t ms;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		ms = (int64_t)(x % (uint64_t)(GPUQ_TIME_MAX_MS - GPUQ_TIME_MIN_MS + 1)) +
		     GPUQ_TIME_MIN_MS;
		gpuq_time_format(ms, forms[i & 1], out, sizeof(out));
		if (gpuq_time_parse(out, &back) != GPUQ_OK || back != ms)
			fail_msg("%lld -> %s -> %lld", (long long)ms, out, (long long)back);
		gpuq_time_format(ms, GPUQ_TIME_SECONDS, out, sizeof(out));
		if (gpuq_time_parse(out, &back) != GPUQ_OK ||
		    back != ms - ((ms % 1000) + 1000) % 1000)
			fail_msg("%lld -> %s -> %lld (seconds)", (long long)ms, out,
				 (long long)back);
	}
}

/* A growing text for gpuq_json_escape to write into. */
typedef struct {
	char s[256]; /* what was written, NUL-terminated */
	size_t n;    /* its length */
	int calls;   /* how many pieces */
} sink_t;

static void put_sink(void *to, const char *p, size_t n)
{
	sink_t *k = to;

	assert_true(k->n + n < sizeof(k->s));
	memcpy(k->s + k->n, p, n);
	k->n += n;
	k->s[k->n] = '\0';
	k->calls++;
}

static void json_escape_table(void **state)
{
	static const struct {
		const char *in;
		size_t n; /* 0: strlen(in) */
		const char *out;
	} cases[] = {
	    {"", 0, ""},
	    {"plain text", 0, "plain text"},
	    {"say \"hi\"", 0, "say \\\"hi\\\""},
	    {"C:\\dir", 0, "C:\\\\dir"},
	    {"a\nb\tc\rd", 0, "a\\nb\\tc\\rd"},
	    {"\b\f", 0, "\\b\\f"},
	    {"\x01\x1f", 0, "\\u0001\\u001f"},
	    {"a\0b", 3, "a\\u0000b"},
	    {"\x7f", 0, "\x7f"},		     /* DEL is not a control character to JSON */
	    {"/ and ~", 0, "/ and ~"},		     /* left to JSON Pointer's escaping */
	    {"caf\xc3\xa9", 0, "caf\xc3\xa9"},	     /* valid UTF-8 as it is */
	    {"\xe2\x82\xac 5", 0, "\xe2\x82\xac 5"}, /* a three-byte sequence */
	    {"\xf0\x9f\x98\x80", 0, "\xf0\x9f\x98\x80"},
	    {"a\xffz", 0, "a\\ufffdz"},				     /* a byte of no sequence */
	    {"\xc3", 0, "\\ufffd"},				     /* a sequence cut short */
	    {"\xc0\xaf", 0, "\\ufffd\\ufffd"},			     /* an overlong '/' */
	    {"\xed\xa0\x80", 0, "\\ufffd\\ufffd\\ufffd"},	     /* a surrogate */
	    {"\xf4\x90\x80\x80", 0, "\\ufffd\\ufffd\\ufffd\\ufffd"}, /* above U+10FFFF */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sink_t k = {"", 0, 0};
		size_t n = cases[i].n ? cases[i].n : strlen(cases[i].in);

		gpuq_json_escape(cases[i].in, n, put_sink, &k);
		if (strcmp(k.s, cases[i].out))
			fail_msg("case %zu: got \"%s\", want \"%s\"", i, k.s, cases[i].out);
	}
}

static void json_escape_runs(void **state)
{
	sink_t k = {"", 0, 0};

	(void)state;
	/* plain runs go out whole: "ab", "\n", "cd" */
	gpuq_json_escape("ab\ncd", 5, put_sink, &k);
	assert_string_equal(k.s, "ab\\ncd");
	assert_int_equal(k.calls, 3);
	k = (sink_t){"", 0, 0};
	gpuq_json_escape("abc", 3, put_sink, &k);
	assert_int_equal(k.calls, 1);
	k = (sink_t){"", 0, 0};
	gpuq_json_escape("abc", 0, put_sink, &k);
	assert_int_equal(k.calls, 0);
}

/* gpuq_json_plain_len stops at the first byte gpuq_json_escape would not
 * write as it is, wherever it falls (in an 8-byte word, in the tail, past
 * a plain word), and runs to the end when there is none. */
static void json_plain_len_stops(void **state)
{
	static const unsigned char stops[] = {0x00, 0x01, 0x1f, '"', '\\', 0x80, 0xc3, 0xff};
	static const unsigned char plain[] = {' ', '!', '#', '/', '~', '[', ']', 0x7f};
	char s[40] = "";

	(void)state;
	for (size_t n = 0; n <= sizeof(s); n++) {
		for (size_t i = 0; i < n; i++)
			s[i] = (char)plain[i % sizeof(plain)];
		assert_int_equal(gpuq_json_plain_len(s, n), n);
		for (size_t at = 0; at < n; at++) {
			for (size_t k = 0; k < sizeof(stops); k++) {
				char c = s[at];

				s[at] = (char)stops[k];
				if (gpuq_json_plain_len(s, n) != at)
					fail_msg("length %zu, byte 0x%02x at %zu: got %zu", n,
						 stops[k], at, gpuq_json_plain_len(s, n));
				s[at] = c;
			}
		}
	}
	assert_int_equal(gpuq_json_plain_len("abc\"def", 7), 3);
	assert_int_equal(gpuq_json_plain_len("caf\xc3\xa9", 5), 3);
}

static void json_fputs_quotes(void **state)
{
	char buf[128] = "";
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	(void)state;
	assert_non_null(f);
	gpuq_json_fputs(f, "a\"b\x01\xff");
	fputc(' ', f);
	gpuq_json_fputs(f, NULL);
	fclose(f);
	assert_string_equal(buf, "\"a\\\"b\\u0001\\ufffd\" \"\"");
}

static void fnv1a32_check_values(void **state)
{
	(void)state;
	/* the published FNV-1a 32-bit test vectors */
	assert_true(gpuq_fnv1a32(GPUQ_FNV1A32_BASIS, "", 0) == 0x811c9dc5u);
	assert_true(gpuq_fnv1a32(GPUQ_FNV1A32_BASIS, "a", 1) == 0xe40c292cu);
	assert_true(gpuq_fnv1a32(GPUQ_FNV1A32_BASIS, "foobar", 6) == 0xbf9cf968u);
	assert_true(gpuq_fnv1a32(gpuq_fnv1a32(GPUQ_FNV1A32_BASIS, "foo", 3), "bar", 3) ==
		    0xbf9cf968u);
	assert_true(gpuq_fnv1a32_str(GPUQ_FNV1A32_BASIS, "foobar") == 0xbf9cf968u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(time_parse_accepts), cmocka_unit_test(time_parse_refuses),
	    cmocka_unit_test(time_civil_fields),  cmocka_unit_test(time_format_forms),
	    cmocka_unit_test(time_round_trips),	  cmocka_unit_test(json_escape_table),
	    cmocka_unit_test(json_escape_runs),	  cmocka_unit_test(json_plain_len_stops),
	    cmocka_unit_test(json_fputs_quotes),  cmocka_unit_test(fnv1a32_check_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for base: error names, diagnostics, bounded copies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "base/bytes.h"

static void strerror_names_every_code(void **state)
{
	(void)state;
	for (int rc = 0; rc >= GPUQ_ESTOPPED; rc--)
		assert_string_not_equal(gpuq_strerror(rc), "unknown error");
	assert_string_equal(gpuq_strerror(1), "unknown error");
	assert_string_equal(gpuq_strerror(GPUQ_EINVAL), "invalid input");
}

static void diag_set_and_prefix(void **state)
{
	gpuq_diag_t d = {{0}};

	(void)state;
	assert_int_equal(
	    gpuq_diag_set(&d, GPUQ_EINVAL, "field %s: bad value \"%s\"", "spec.x", "1Gb"),
	    GPUQ_EINVAL);
	assert_string_equal(d.msg, "field spec.x: bad value \"1Gb\"");
	gpuq_diag_prefix(&d, "file %s: document %d: ", "a.yaml", 2);
	assert_string_equal(d.msg, "file a.yaml: document 2: field spec.x: bad value \"1Gb\"");
	assert_int_equal(gpuq_diag_set(NULL, GPUQ_ERANGE, "x"), GPUQ_ERANGE);
	gpuq_diag_prefix(NULL, "x");
}

static void diag_truncates(void **state)
{
	gpuq_diag_t d;
	char big[4000];

	(void)state;
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	gpuq_diag_set(&d, GPUQ_EINVAL, "%s", big);
	assert_int_equal(strlen(d.msg), GPUQ_DIAG_MAX - 1);
	gpuq_diag_prefix(&d, "p: ");
	assert_int_equal(strlen(d.msg), GPUQ_DIAG_MAX - 1);
	assert_memory_equal(d.msg, "p: aaa", 6);
}

/* gpuq_strjoin writes what snprintf("%s%s%s") would, cut the same way at
 * every capacity. */
static void strjoin_as_snprintf(void **state)
{
	static const char *const parts[][3] = {
	    {"spec.template.spec", ".containers", ""},
	    {"/spec/template/metadata", "/", "labels"},
	    {"", "", ""},
	    {"a", "", "bc"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		for (size_t cap = 1; cap <= 40; cap++) {
			char want[48], got[48];

			snprintf(want, cap, "%s%s%s", parts[i][0], parts[i][1], parts[i][2]);
			memset(got, 'x', sizeof(got));
			gpuq_strjoin(got, cap, parts[i][0], parts[i][1], parts[i][2]);
			assert_string_equal(got, want);
		}
	}
}

static void strlcpy_bounds(void **state)
{
	char buf[4];

	(void)state;
	assert_int_equal(gpuq_strlcpy(buf, "abc", sizeof(buf)), GPUQ_OK);
	assert_string_equal(buf, "abc");
	assert_int_equal(gpuq_strlcpy(buf, "abcd", sizeof(buf)), GPUQ_ELIMIT);
	assert_string_equal(buf, "abc");
	assert_int_equal(gpuq_strlcpy(buf, "x", 0), GPUQ_ELIMIT);
}

static void duration_forms(void **state)
{
	int64_t ms = -1;
	gpuq_diag_t d = {{0}};

	(void)state;
	assert_int_equal(gpuq_duration_parse("250", &ms, &d), GPUQ_OK);
	assert_int_equal(ms, 250);
	assert_int_equal(gpuq_duration_parse("250ms", &ms, &d), GPUQ_OK);
	assert_int_equal(ms, 250);
	assert_int_equal(gpuq_duration_parse("1.5s", &ms, &d), GPUQ_OK);
	assert_int_equal(ms, 1500);
	assert_int_equal(gpuq_duration_parse("2m", &ms, &d), GPUQ_OK);
	assert_int_equal(ms, 120000);
	assert_int_equal(gpuq_duration_parse("1h", &ms, &d), GPUQ_OK);
	assert_int_equal(ms, 3600000);
	assert_int_equal(gpuq_duration_parse(".5s", &ms, &d), GPUQ_OK);
	assert_int_equal(ms, 500);
	assert_int_equal(gpuq_duration_parse("1.0005s", &ms, &d), GPUQ_EINVAL);
	assert_string_equal(d.msg, "duration \"1.0005s\" is finer than 1ms");
	assert_int_equal(gpuq_duration_parse("1x", &ms, &d), GPUQ_EINVAL);
	assert_int_equal(gpuq_duration_parse("", &ms, &d), GPUQ_EINVAL);
	assert_int_equal(gpuq_duration_parse("-1s", &ms, &d), GPUQ_EINVAL);
	assert_int_equal(gpuq_duration_parse("100000h", &ms, &d), GPUQ_ERANGE);
	assert_string_equal(d.msg, "duration \"100000h\" is over 10 years");
}

static void base64_round_trip(void **state)
{
	unsigned char all[256];
	char enc[GPUQ_BASE64_LEN(256) + 1], *dec = NULL;
	size_t n;

	(void)state;
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	/* RFC 4648 test vectors */
	enc[gpuq_base64_encode("foob", 4, enc)] = '\0';
	assert_string_equal(enc, "Zm9vYg==");
	enc[gpuq_base64_encode("fooba", 5, enc)] = '\0';
	assert_string_equal(enc, "Zm9vYmE=");
	enc[gpuq_base64_encode("foobar", 6, enc)] = '\0';
	assert_string_equal(enc, "Zm9vYmFy");
	for (size_t len = 0; len <= 256; len += 17) {
		enc[gpuq_base64_encode(all, len, enc)] = '\0';
		assert_int_equal(strlen(enc), GPUQ_BASE64_LEN(len));
		assert_int_equal(gpuq_base64_decode(enc, 256, &dec, &n), GPUQ_OK);
		assert_int_equal(n, len);
		assert_memory_equal(dec, all, len);
		free(dec);
	}
	assert_int_equal(gpuq_base64_decode("Zm9v\nYmFy", 16, &dec, &n), GPUQ_OK);
	assert_string_equal(dec, "foobar");
	free(dec);
	assert_int_equal(gpuq_base64_decode("Zm9v!", 16, &dec, &n), GPUQ_EINVAL);
	assert_int_equal(gpuq_base64_decode("Zg=x", 16, &dec, &n), GPUQ_EINVAL);
	assert_int_equal(gpuq_base64_decode("Zm9vYmFy", 5, &dec, &n), GPUQ_ELIMIT);
}

/* Known vectors at the lengths that end in each padding (0 to 4 bytes,
 * 0x00 and 0xff), and every length to 70 (the 6-byte, 3-byte and padded
 * paths and their joins) against a bit-at-a-time encoder. */
static void base64_against_reference(void **state)
{
	static const char alphabet[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	static const struct {
		const char *in;
		size_t n;
		const char *out;
	} known[] = {
	    {"", 0, ""},
	    {"f", 1, "Zg=="},
	    {"fo", 2, "Zm8="},
	    {"foo", 3, "Zm9v"},
	    {"foob", 4, "Zm9vYg=="},
	    {"\0", 1, "AA=="},
	    {"\xff", 1, "/w=="},
	    {"\0\0", 2, "AAA="},
	    {"\xff\xff", 2, "//8="},
	    {"\0\0\0", 3, "AAAA"},
	    {"\xff\xff\xff", 3, "////"},
	    {"\xff\0\xff\0", 4, "/wD/AA=="},
	};
	unsigned char in[70];
	char got[GPUQ_BASE64_LEN(70) + 1], want[GPUQ_BASE64_LEN(70) + 1];

	(void)state;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		got[gpuq_base64_encode(known[i].in, known[i].n, got)] = '\0';
		assert_string_equal(got, known[i].out);
	}
	for (size_t i = 0; i < sizeof(in); i++) /* 0x00, 0xff and what lies between */
		in[i] = (unsigned char)(i % 3 == 0 ? 0xff : i % 3 == 1 ? 0x00 : i * 37);
	for (size_t n = 0; n <= sizeof(in); n++) {
		size_t w = 0, bits = 0;
		uint32_t acc = 0;

		for (size_t i = 0; i < n; i++) {
			acc = acc << 8 | in[i];
			for (bits += 8; bits >= 6; bits -= 6)
				want[w++] = alphabet[acc >> (bits - 6) & 63];
		}
		if (bits)
			want[w++] = alphabet[acc << (6 - bits) & 63];
		while (w % 4)
			want[w++] = '=';
		want[w] = '\0';
		assert_int_equal(gpuq_base64_encode(in, n, got), w);
		got[w] = '\0';
		assert_string_equal(got, want);
	}
}

/* gpuq_u64_text writes what snprintf("%" PRIu64) would. */
static void u64_text_as_snprintf(void **state)
{
	static const uint64_t v[] = {0, 1, 9, 10, 99, 100, 12345, 4294967296u, UINT64_MAX};

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char want[32], got[GPUQ_U64_TEXT_MAX];
		size_t n = gpuq_u64_text(v[i], got);

		snprintf(want, sizeof(want), "%" PRIu64, v[i]);
		assert_string_equal(got, want);
		assert_int_equal(n, strlen(want));
	}
}

/* CRC-32C's check value (RFC 3720's), in one piece and in two. */
/* The UTF-8 rule the review reader and the manifest reader share. */
static void utf8_validity(void **state)
{
	(void)state;
	assert_true(gpuq_utf8_valid("", 0));
	assert_true(gpuq_utf8_valid("plain ascii", 11));
	assert_true(gpuq_utf8_valid("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80", 14));
	assert_false(gpuq_utf8_valid("\xc0\xaf", 2));	      /* overlong '/' */
	assert_false(gpuq_utf8_valid("\xed\xa0\x80", 3));     /* a surrogate */
	assert_false(gpuq_utf8_valid("\xf4\x90\x80\x80", 4)); /* above U+10FFFF */
	assert_false(gpuq_utf8_valid("\xe2\x82", 2));	      /* cut short */
	assert_false(gpuq_utf8_valid("\xff", 1));
}

static void crc32c_check_value(void **state)
{
	(void)state;
	assert_int_equal(gpuq_crc32c(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(gpuq_crc32c(gpuq_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);
	assert_int_equal(gpuq_crc32c(0, "", 0), 0);
}

/* FNV-1a 64 against the function's published test values, in pieces and
 * whole; the string form agrees with the byte form. */
static void fnv1a_check_values(void **state)
{
	(void)state;
	assert_true(gpuq_fnv1a(GPUQ_FNV1A_BASIS, "", 0) == 0xcbf29ce484222325ULL);
	assert_true(gpuq_fnv1a(GPUQ_FNV1A_BASIS, "a", 1) == 0xaf63dc4c8601ec8cULL);
	assert_true(gpuq_fnv1a(GPUQ_FNV1A_BASIS, "foobar", 6) == 0x85944171f73967e8ULL);
	assert_true(gpuq_fnv1a(gpuq_fnv1a(GPUQ_FNV1A_BASIS, "foo", 3), "bar", 3) ==
		    0x85944171f73967e8ULL);
	assert_true(gpuq_fnv1a_str(GPUQ_FNV1A_BASIS, "foobar") == 0x85944171f73967e8ULL);
	assert_true(gpuq_fnv1a_str(GPUQ_FNV1A_SEED, "x") == gpuq_fnv1a(GPUQ_FNV1A_SEED, "x", 1));
}

/* A counted snapshot for the publication slot. */
typedef struct {
	int refs; /* references held */
} counted_t;

static void counted_ref(void *s)
{
	((counted_t *)s)->refs++;
}

static void counted_unref(void *s)
{
	((counted_t *)s)->refs--;
}

/* Publish, read, replace, clear: each reference is taken and dropped once;
 * the old snapshot stays with a reader that holds it. */
static void pub_slot_references(void **state)
{
	counted_t a = {1}, b = {1}; /* each comes with the publisher's reference */
	gpuq_pub_t p;
	counted_t *got;

	(void)state;
	assert_int_equal(gpuq_pub_init(&p, counted_ref, counted_unref), GPUQ_OK);
	assert_false(gpuq_pub_has(&p));
	assert_null(gpuq_pub_get(&p));
	gpuq_pub_swap(&p, &a);
	assert_true(gpuq_pub_has(&p));
	got = gpuq_pub_get(&p);
	assert_ptr_equal(got, &a);
	assert_int_equal(a.refs, 2);
	gpuq_pub_swap(&p, &b); /* the slot's reference to a goes; the reader's stays */
	assert_int_equal(a.refs, 1);
	counted_unref(got);
	assert_int_equal(a.refs, 0);
	assert_ptr_equal(gpuq_pub_get(&p), &b);
	counted_unref(&b);
	gpuq_pub_swap(&p, NULL);
	assert_false(gpuq_pub_has(&p));
	assert_int_equal(b.refs, 0);
	a.refs = 1; /* published again, with a new reference */
	gpuq_pub_swap(&p, &a);
	gpuq_pub_deinit(&p); /* drops the last one */
	assert_int_equal(a.refs, 0);
}

/* Wall milliseconds. */
static long long wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Every log line starts with its time, RFC 3339 in UTC to the millisecond,
 * then level, module and message: `2026-11-26T16:08:33.123Z warn store: x`.
 * The time parses back to a moment between just before and just after the
 * call. */
static void log_lines_carry_rfc3339_utc_ms(void **state)
{
	char path[] = "/tmp/gpuq-test-log-XXXXXX", line[256], level[8], module[16], msg[64];
	int fd = mkstemp(path), saved = dup(2), year, mon, day, hour, min, sec, ms, n = 0;
	long long before, after, at;
	struct tm tm = {0};
	FILE *f;

	(void)state;
	assert_true(fd >= 0 && saved >= 0);
	before = wall_ms();
	assert_int_equal(dup2(fd, 2), 2);
	gpuq_log(GPUQ_LOG_WARN, "store", "first %d", 1);
	gpuq_log(GPUQ_LOG_ERROR, "controller", "second");
	assert_int_equal(dup2(saved, 2), 2);
	after = wall_ms();
	close(saved);
	f = fdopen(fd, "r");
	assert_non_null(f);
	rewind(f);
	while (fgets(line, sizeof(line), f)) {
		char z = 0;
		assert_int_equal(sscanf(line, "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c %7s %15[^:]: %63[^\n]",
					&year, &mon, &day, &hour, &min, &sec, &ms, &z, level,
					module, msg),
				 11);
		assert_int_equal(z, 'Z');
		assert_int_equal(line[4], '-'); /* fixed widths: 2026-01-02T03:04:05.006Z */
		assert_int_equal(line[23], 'Z');
		tm.tm_year = year - 1900;
		tm.tm_mon = mon - 1;
		tm.tm_mday = day;
		tm.tm_hour = hour;
		tm.tm_min = min;
		tm.tm_sec = sec;
		at = (long long)timegm(&tm) * 1000 + ms;
		assert_true(at >= before && at <= after);
		assert_string_equal(level, n ? "error" : "warn");
		assert_string_equal(module, n ? "controller" : "store");
		assert_string_equal(msg, n ? "second" : "first 1");
		n++;
	}
	assert_int_equal(n, 2);
	fclose(f);
	unlink(path);
}

/* Varints (base/bytes.h): each value back as written, in the bytes its
 * size asks (a small or negative number in one), and a varint past its
 * width or the input a bad read. */
static void varint_round_trip(void **state)
{
	static const struct {
		uint64_t v;   /* value */
		int bits;     /* 32 or 64 */
		size_t bytes; /* encoded length */
	} cases[] = {
	    {0, 64, 1},		 {1, 64, 1},	       {UINT64_MAX, 64, 1}, /* -1 */
	    {63, 64, 1},	 {64, 64, 2},	       {1764226000000ull, 64, 6},
	    {INT64_MAX, 64, 10}, {1ull << 63, 64, 10}, /* INT64_MIN */
	    {0, 32, 1},		 {UINT32_MAX, 32, 1},  /* -1 */
	    {INT32_MAX, 32, 5},	 {0x80000000u, 32, 5}, /* INT32_MIN */
	};
	static const uint8_t long32[] = {0xff, 0xff, 0xff, 0xff, 0x1f}; /* 35 bits */
	static const uint8_t cut[] = {0x80};
	uint8_t buf[16] = {0};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		gpuq_wr_t w = {buf, sizeof(buf), 0, true};
		gpuq_rd_t r = {buf, 0, 0, false, true};
		uint64_t got;

		if (cases[i].bits == 32)
			gpuq_put_u32(&w, (uint32_t)cases[i].v);
		else
			gpuq_put_u64(&w, cases[i].v);
		assert_int_equal(w.len, cases[i].bytes);
		r.n = w.len;
		got = cases[i].bits == 32 ? gpuq_get_u32(&r) : gpuq_get_u64(&r);
		assert_false(r.bad);
		assert_int_equal(got, cases[i].v);
		assert_int_equal(r.off, r.n);
	}
	{
		gpuq_rd_t r = {long32, sizeof(long32), 0, false, true};

		(void)gpuq_get_u32(&r);
		assert_true(r.bad);
	}
	{
		gpuq_rd_t r = {cut, sizeof(cut), 0, false, true};

		(void)gpuq_get_u64(&r);
		assert_true(r.bad);
	}
}

/* ---- gpuq_sort_u32 ---- */

typedef struct {
	const uint32_t *key; /* each id's key: ids with equal keys keep their order */
	size_t calls;	     /* comparisons made */
} sort_ctx_t;

static int by_key(const void *a, const void *b, void *ctx)
{
	sort_ctx_t *c = ctx;
	uint32_t x = c->key[*(const uint32_t *)a], y = c->key[*(const uint32_t *)b];

	c->calls++;
	return x < y ? -1 : x > y;
}

/* By key, then by id: the stable order of ids that came in ascending. */
static int by_key_id(const void *a, const void *b, void *ctx)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int k = by_key(a, b, ctx);

	return k ? k : (x > y) - (x < y);
}

/* Every shape of input (sorted, reversed, runs, few keys, random) sorts as
 * qsort does with ties broken by arrival, and one already sorted costs
 * n - 1 comparisons. */
static void sort_u32_stable_and_adaptive(void **state)
{
	enum { N = 3000 };
	static uint32_t key[N], v[N], want[N];
	uint64_t rng = 42;
	(void)state;
	for (int shape = 0; shape < 6; shape++) {
		for (size_t n = 0; n <= N; n = n ? n * 3 + 1 : 1) {
			sort_ctx_t c = {key, 0};

			for (size_t i = 0; i < n; i++) {
				rng = rng * 6364136223846793005ull + 1442695040888963407ull;
				uint32_t r = (uint32_t)(rng >> 33);
				key[i] = shape == 0   ? (uint32_t)i
					 : shape == 1 ? (uint32_t)(n - i)
					 : shape == 2 ? (uint32_t)(i % 97) /* runs */
					 : shape == 3 ? r % 4		   /* few keys */
					 : shape == 4
					     ? (uint32_t)(n - i) / 8 /* descending with ties */
					     : r;
				v[i] = want[i] = (uint32_t)i;
			}
			qsort_r(want, n, sizeof(*want), by_key_id, &c);
			c.calls = 0;
			assert_int_equal(gpuq_sort_u32(v, n, by_key, &c), GPUQ_OK);
			assert_memory_equal(v, want, n * sizeof(*v));
			if (shape == 0)
				assert_int_equal(c.calls, n ? n - 1 : 0);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(strerror_names_every_code),
	    cmocka_unit_test(diag_set_and_prefix),
	    cmocka_unit_test(diag_truncates),
	    cmocka_unit_test(strlcpy_bounds),
	    cmocka_unit_test(strjoin_as_snprintf),
	    cmocka_unit_test(duration_forms),
	    cmocka_unit_test(base64_round_trip),
	    cmocka_unit_test(base64_against_reference),
	    cmocka_unit_test(u64_text_as_snprintf),
	    cmocka_unit_test(utf8_validity),
	    cmocka_unit_test(crc32c_check_value),
	    cmocka_unit_test(fnv1a_check_values),
	    cmocka_unit_test(varint_round_trip),
	    cmocka_unit_test(pub_slot_references),
	    cmocka_unit_test(log_lines_carry_rfc3339_utc_ms),
	    cmocka_unit_test(sort_u32_stable_and_adaptive),
	};
	return cmocka_run_group_tests_name("base", tests, NULL, NULL);
}

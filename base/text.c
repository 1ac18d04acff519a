/* base/text.c: RFC 3339 times read and written, and JSON strings written:
 * gpuq's one of each (issue 34). No clock, no locale, no time zone database:
 * the calendar is Howard Hinnant's civil-day arithmetic. */
#include <stdio.h>
#include <string.h>

#include "base/base.h"

/* ---- Time ---- */

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* The date of day z since 1970-01-01 (Hinnant's civil_from_days). */
static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	int64_t era, doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

int gpuq_days_in_month(int64_t y, int m)
{
	static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	if (m < 1 || m > 12)
		return 0;
	return m == 2 && leap ? 29 : days[m - 1];
}

int gpuq_time_from_civil(int64_t y, int mo, int d, int h, int mi, int s, int64_t *ms)
{
	if (y < 0 || y > 9999 || d < 1 || d > gpuq_days_in_month(y, mo) || h < 0 || h > 23 ||
	    mi < 0 || mi > 59 || s < 0 || s > 60)
		return GPUQ_EINVAL;
	*ms = (days_from_civil(y, mo, d) * 86400 + (int64_t)h * 3600 + (int64_t)mi * 60 + s) * 1000;
	return GPUQ_OK;
}

/* n decimal digits at s into *out; false at anything else (a NUL too). */
static bool digits(const char *s, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

/* The zone at p ("Z", "z", "+hh:mm" or "-hh:mm", then the end) into *off_s,
 * seconds east of UTC. */
static bool zone(const char *p, int64_t *off_s)
{
	int oh, om;

	if ((*p == 'Z' || *p == 'z') && !p[1]) {
		*off_s = 0;
		return true;
	}
	if ((*p != '+' && *p != '-') || !digits(p + 1, 2, &oh) || p[3] != ':' ||
	    !digits(p + 4, 2, &om) || p[6] || oh > 23 || om > 59)
		return false;
	*off_s = (int64_t)(oh * 60 + om) * 60 * (*p == '-' ? -1 : 1);
	return true;
}

int gpuq_time_parse(const char *s, int64_t *ms)
{
	int y, mo, d, h, mi, sec, frac = 0, scale = 100;
	int64_t off, t;
	const char *p;

	if (!s || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) || s[7] != '-' ||
	    !digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') || !digits(s + 11, 2, &h) ||
	    s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' || !digits(s + 17, 2, &sec))
		return GPUQ_EINVAL;
	p = s + 19;
	if (*p == '.') {
		if (p[1] < '0' || p[1] > '9')
			return GPUQ_EINVAL;
		/* RFC 3339's 1*DIGIT, as Go's time.Parse reads it: any number,
		 * cut (not rounded) to the millisecond */
		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
			frac += scale * (*p - '0');
	}
	if (!zone(p, &off) || gpuq_time_from_civil(y, mo, d, h, mi, sec, &t))
		return GPUQ_EINVAL;
	*ms = t - off * 1000 + frac;
	return GPUQ_OK;
}

size_t gpuq_time_format(int64_t ms, gpuq_time_form_t form, char *out, size_t cap)
{
	/* floor division: -1 ms is 1969-12-31T23:59:59.999 */
	int64_t sec = ms / 1000 - (ms % 1000 < 0), day = sec / 86400 - (sec % 86400 < 0), y;
	int64_t tod = sec - day * 86400;
	int milli = (int)(ms - sec * 1000), mo, d, n;

	if (!cap)
		return 0;
	out[0] = '\0';
	if (ms < GPUQ_TIME_MIN_MS || ms > GPUQ_TIME_MAX_MS)
		return 0;
	civil_from_days(day, &y, &mo, &d);
	if (form == GPUQ_TIME_BASIC)
		n = snprintf(out, cap, "%04d%02d%02dT%02d%02d%02dZ", (int)y, mo, d,
			     (int)(tod / 3600), (int)(tod / 60 % 60), (int)(tod % 60));
	else
		n = snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d%s", (int)y, mo, d,
			     (int)(tod / 3600), (int)(tod / 60 % 60), (int)(tod % 60),
			     form == GPUQ_TIME_SECONDS ? "Z" : ".");
	if (n > 0 && (size_t)n < cap && form == GPUQ_TIME_MILLIS)
		n += snprintf(out + n, cap - (size_t)n, "%03dZ", milli);
	else if (n > 0 && (size_t)n < cap && form == GPUQ_TIME_MICROS)
		n += snprintf(out + n, cap - (size_t)n, "%06dZ", milli * 1000);
	if (n <= 0 || (size_t)n >= cap) {
		out[0] = '\0'; /* too small: nothing rather than a cut time */
		return 0;
	}
	return (size_t)n;
}

/* ---- JSON strings ---- */

/* 1 for the bytes written as they are: printable ASCII but '"' and '\\'
 * (most bytes; a table because the test runs on every byte). */
static const unsigned char json_plain[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};

/* Whether the 8 bytes at p are all json_plain: none with its top bit set,
 * and for the others (below 0x80, so no sum below carries into the next
 * byte) + 0x60 sets the top bit exactly when the byte is 0x20 or more, and
 * + 0x7f exactly when the byte differs from '"' (or '\\') after an xor
 * with it. */
static inline bool word_plain(const unsigned char *p)
{
	const uint64_t ones = 0x0101010101010101u, tops = ones * 0x80;
	uint64_t x, printable, not_quote, not_backslash;

	memcpy(&x, p, 8);
	printable = x + ones * 0x60;
	not_quote = (x ^ ones * '"') + ones * 0x7f;
	not_backslash = (x ^ ones * '\\') + ones * 0x7f;
	return !((x | ~(printable & not_quote & not_backslash)) & tops);
}

size_t gpuq_json_plain_len(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (n - i >= 8 && word_plain(p + i))
		i += 8;
	/* all words plain and a few bytes left: the last 8 (overlapping) */
	if (i < n && n - i < 8 && i > 0 && word_plain(p + n - 8))
		return n;
	while (i < n && json_plain[p[i]])
		i++;
	return i;
}

void gpuq_json_escape(const char *s, size_t n, gpuq_put_fn *put, void *to)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s, *end = p + n, *run = p;

	for (;;) {
		const char *rep = NULL;
		char u[7] = "\\u00";
		size_t k = 1;

		p += gpuq_json_plain_len((const char *)p, (size_t)(end - p));
		if (p >= end)
			break;
		if (*p == '"')
			rep = "\\\"";
		else if (*p == '\\')
			rep = "\\\\";
		else if (*p == '\n')
			rep = "\\n";
		else if (*p == '\t')
			rep = "\\t";
		else if (*p == '\r')
			rep = "\\r";
		else if (*p == '\b')
			rep = "\\b";
		else if (*p == '\f')
			rep = "\\f";
		else if (*p < 0x20) {
			u[4] = hex[*p >> 4];
			u[5] = hex[*p & 15];
			rep = u;
		} else if (*p >= 0x80 && !(k = gpuq_utf8_len(p, end))) {
			rep = "\\ufffd"; /* a byte of no UTF-8 sequence, as Go's encoding/json */
			k = 1;
		}
		if (rep) {
			if (p > run)
				put(to, (const char *)run, (size_t)(p - run));
			put(to, rep, strlen(rep));
			run = p + k;
		}
		p += k;
	}
	if (p > run)
		put(to, (const char *)run, (size_t)(p - run));
}

void gpuq_put_file(void *file, const char *p, size_t n)
{
	fwrite(p, 1, n, file);
}

void gpuq_json_fputs(FILE *out, const char *s)
{
	fputc('"', out);
	if (s)
		gpuq_json_escape(s, strlen(s), gpuq_put_file, out);
	fputc('"', out);
}

/* base: error names, diagnostics, logging. */
#include "base/base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const struct {
	int rc;
	const char *name;
} err_names[] = {
    {GPUQ_OK, "ok"},
    {GPUQ_ENOMEM, "out of memory"},
    {GPUQ_EINVAL, "invalid input"},
    {GPUQ_ERANGE, "value out of range"},
    {GPUQ_ENOTFOUND, "not found"},
    {GPUQ_EEXIST, "already exists"},
    {GPUQ_ELIMIT, "limit exceeded"},
    {GPUQ_EIO, "I/O error"},
    {GPUQ_ETLS, "TLS error"},
    {GPUQ_ESTORE, "state store error"},
    {GPUQ_EHTTP, "HTTP error"},
    {GPUQ_ECORRUPT, "corrupt data"},
    {GPUQ_EDENIED, "denied"},
    {GPUQ_EAGAIN, "try again"},
    {GPUQ_ECONFLICT, "conflict"},
    {GPUQ_EGONE, "resource version gone"},
    {GPUQ_EFENCED, "fenced: the Lease is not held"},
    {GPUQ_ESTOPPED, "stopping"},
};

const char *gpuq_strerror(int rc)
{
	for (size_t i = 0; i < sizeof(err_names) / sizeof(err_names[0]); i++)
		if (err_names[i].rc == rc)
			return err_names[i].name;
	return "unknown error";
}

int gpuq_diag_set(gpuq_diag_t *diag, int rc, const char *fmt, ...)
{
	va_list ap;

	if (!diag)
		return rc;
	va_start(ap, fmt);
	vsnprintf(diag->msg, sizeof(diag->msg), fmt, ap);
	va_end(ap);
	return rc;
}

void gpuq_diag_prefix(gpuq_diag_t *diag, const char *fmt, ...)
{
	char old[GPUQ_DIAG_MAX];
	va_list ap;
	int n;

	if (!diag)
		return;
	memcpy(old, diag->msg, sizeof(old));
	va_start(ap, fmt);
	n = vsnprintf(diag->msg, sizeof(diag->msg), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(diag->msg))
		return;
	snprintf(diag->msg + n, sizeof(diag->msg) - (size_t)n, "%s", old);
}

/* Process-wide log threshold: written once by main before threads start. */
static gpuq_log_level_t log_threshold = GPUQ_LOG_INFO;

void gpuq_log_set_level(gpuq_log_level_t level)
{
	log_threshold = level;
}

void gpuq_log(gpuq_log_level_t level, const char *module, const char *fmt, ...)
{
	static const char *const names[] = {"debug", "info", "warn", "error"};
	char line[2048]; /* one log line; longer messages are cut */
	va_list ap;
	int n;

	struct timespec now = {0};
	char stamp[GPUQ_TIME_TEXT_MAX];

	if (level < log_threshold)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	/* RFC 3339, UTC, milliseconds: sorts as text, parses with any RFC 3339 reader */
	gpuq_time_format((int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000, GPUQ_TIME_MILLIS,
			 stamp, sizeof(stamp));
	n = snprintf(line, sizeof(line), "%s %s %s: ", stamp, names[level], module);
	if (n < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	n = (int)strlen(line);
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}

int gpuq_strlcpy(char *dst, const char *src, size_t cap)
{
	size_t len = strlen(src);

	if (cap == 0)
		return GPUQ_ELIMIT;
	if (len >= cap) {
		memcpy(dst, src, cap - 1);
		dst[cap - 1] = '\0';
		return GPUQ_ELIMIT;
	}
	memcpy(dst, src, len + 1);
	return GPUQ_OK;
}

void gpuq_strjoin(char *dst, size_t cap, const char *a, const char *b, const char *c)
{
	const char *parts[3] = {a, b, c};
	size_t used = 0;

	for (size_t i = 0; i < 3; i++) {
		size_t len = strlen(parts[i]);

		if (len > cap - 1 - used)
			len = cap - 1 - used;
		memcpy(dst + used, parts[i], len);
		used += len;
	}
	dst[used] = '\0';
}

void gpuq_abort(const char *file, int line, const char *what)
{
	fprintf(stderr, "gpuq: invariant broken at %s:%d: %s\n", file, line, what);
	abort();
}

int gpuq_duration_parse(const char *s, int64_t *out_ms, gpuq_diag_t *diag)
{
	const char *p = s;
	int64_t whole = 0, frac = 0, frac_div = 1, unit = 1;
	int digits = 0;

	while (*p >= '0' && *p <= '9') {
		if (++digits > 15)
			return gpuq_diag_set(diag, GPUQ_ERANGE, "duration \"%s\" is too long", s);
		whole = whole * 10 + (*p++ - '0');
	}
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9') {
			if (frac_div >= 1000000000)
				return gpuq_diag_set(diag, GPUQ_EINVAL,
						     "duration \"%s\": too many decimals", s);
			frac = frac * 10 + (*p++ - '0');
			frac_div *= 10;
			digits++;
		}
	}
	if (digits == 0)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "bad duration \"%s\" (want e.g. 250, \"250ms\", \"1.5s\", "
				     "\"2m\", \"1h\")",
				     s);
	if (!strcmp(p, "") || !strcmp(p, "ms"))
		unit = 1;
	else if (!strcmp(p, "s"))
		unit = 1000;
	else if (!strcmp(p, "m"))
		unit = 60000;
	else if (!strcmp(p, "h"))
		unit = 3600000;
	else
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "bad duration \"%s\" (want e.g. 250, \"250ms\", \"1.5s\", "
				     "\"2m\", \"1h\")",
				     s);
	if (whole > GPUQ_DURATION_MAX_MS / unit)
		return gpuq_diag_set(diag, GPUQ_ERANGE, "duration \"%s\" is over 10 years", s);
	if ((frac * unit) % frac_div)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "duration \"%s\" is finer than 1ms", s);
	*out_ms = whole * unit + frac * unit / frac_div;
	if (*out_ms > GPUQ_DURATION_MAX_MS)
		return gpuq_diag_set(diag, GPUQ_ERANGE, "duration \"%s\" is over 10 years", s);
	return GPUQ_OK;
}

size_t gpuq_base64_encode(const void *src, size_t n, char *dst)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *s = src;
	char *d = dst;
	size_t i = 0;

	for (; n - i >= 3; i += 3) { /* whole groups of three: no tests */
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];

		d[0] = tab[(v >> 18) & 63];
		d[1] = tab[(v >> 12) & 63];
		d[2] = tab[(v >> 6) & 63];
		d[3] = tab[v & 63];
		d += 4;
	}
	for (; i < n; i += 3) { /* the last one or two bytes, padded */
		uint32_t v = (uint32_t)s[i] << 16;
		size_t left = n - i;

		if (left > 1)
			v |= (uint32_t)s[i + 1] << 8;
		if (left > 2)
			v |= s[i + 2];
		*d++ = tab[(v >> 18) & 63];
		*d++ = tab[(v >> 12) & 63];
		d[0] = '=';
		d[1] = '=';
		if (left > 1)
			d[0] = tab[(v >> 6) & 63];
		if (left > 2)
			d[1] = tab[v & 63];
		d += 2;
	}
	return (size_t)(d - dst);
}

static int b64_value(unsigned char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	return ch == '/' ? 63 : -1;
}

int gpuq_base64_decode(const char *s, size_t max_out, char **out, size_t *len)
{
	size_t n = strlen(s), o = 0, sextets = 0, pad = 0;
	uint32_t acc = 0;
	char *dec;

	if (n / 2 > max_out)
		return GPUQ_ELIMIT;
	dec = malloc(n / 4 * 3 + 3);
	if (!dec)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		int v;
		if (ch == '\n' || ch == '\r' || ch == ' ' || ch == '\t')
			continue;
		if (ch == '=') {
			pad++;
			continue;
		}
		v = b64_value(ch);
		if (v < 0 || pad)
			goto bad; /* not base64, or data after the padding */
		acc = acc << 6 | (uint32_t)v;
		if (++sextets % 4 == 0) {
			dec[o++] = (char)(acc >> 16 & 0xff);
			dec[o++] = (char)(acc >> 8 & 0xff);
			dec[o++] = (char)(acc & 0xff);
		}
	}
	/* the last quantum: 2 sextets and "==" give one byte, 3 and "=" two */
	if (sextets % 4 == 2 && pad == 2) {
		dec[o++] = (char)(acc >> 4 & 0xff);
	} else if (sextets % 4 == 3 && pad == 1) {
		dec[o++] = (char)(acc >> 10 & 0xff);
		dec[o++] = (char)(acc >> 2 & 0xff);
	} else if (sextets % 4 != 0 || pad != 0) {
		goto bad;
	}
	if (o > max_out) {
		free(dec);
		return GPUQ_ELIMIT;
	}
	dec[o] = '\0';
	*out = dec;
	*len = o;
	return GPUQ_OK;
bad:
	free(dec);
	return GPUQ_EINVAL;
}

uint32_t gpuq_crc32c(uint32_t crc, const void *p, size_t n)
{
	/* the reflected polynomial 0x82F63B78, four bits at a time */
	static const uint32_t nib[16] = {0x00000000, 0x105ec76f, 0x20bd8ede, 0x30e349b1,
					 0x417b1dbc, 0x5125dad3, 0x61c69362, 0x7198540d,
					 0x82f63b78, 0x92a8fc17, 0xa24bb5a6, 0xb21572c9,
					 0xc38d26c4, 0xd3d3e1ab, 0xe330a81a, 0xf36e6f75};
	const unsigned char *b = p;

	crc = ~crc;
	for (size_t i = 0; i < n; i++) {
		crc = (crc >> 4) ^ nib[(crc ^ b[i]) & 0xf];
		crc = (crc >> 4) ^ nib[(crc ^ (b[i] >> 4)) & 0xf];
	}
	return ~crc;
}

struct timespec gpuq_clock_after_ms(clockid_t clk, int64_t ms)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

uint64_t gpuq_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int64_t gpuq_mono_ms(void)
{
	return (int64_t)(gpuq_mono_ns() / 1000000);
}

bool gpuq_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;

	while (p < end) {
		size_t k = gpuq_utf8_len(p, end);

		if (!k)
			return false;
		p += k;
	}
	return true;
}

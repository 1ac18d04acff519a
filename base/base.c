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

/* Append s to dst[0..*used), cut to leave room for a NUL in cap. */
static inline void join_part(char *dst, size_t cap, size_t *used, const char *s)
{
	size_t len;

	if (!*s)
		return; /* an empty part (most calls have one): nothing to copy */
	len = strlen(s);
	if (len > cap - 1 - *used)
		len = cap - 1 - *used;
	memcpy(dst + *used, s, len);
	*used += len;
}

void gpuq_strjoin(char *dst, size_t cap, const char *a, const char *b, const char *c)
{
	size_t used = 0;

	join_part(dst, cap, &used, a);
	join_part(dst, cap, &used, b);
	join_part(dst, cap, &used, c);
	dst[used] = '\0';
}

size_t gpuq_u64_text(uint64_t v, char out[GPUQ_U64_TEXT_MAX])
{
	char rev[GPUQ_U64_TEXT_MAX];
	size_t n = 0;

	do {
		rev[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		out[i] = rev[n - 1 - i];
	out[n] = '\0';
	return n;
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

/* base64's alphabet (RFC 4648 table 1). */
#define B64_ALPHABET "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

/* Every pair of base64 characters, in the order of the 12 bits they encode:
 * entry v (0..4095) is b64_pairs[2v], b64_pairs[2v + 1]. Three bytes are two
 * lookups and two 2-byte stores instead of four of each; built by the
 * preprocessor (64 rows of 64 pairs, 8 KiB) so it needs no start-up code;
 * laid out as a grid, which clang-format would wrap. */
/* clang-format off */
#define ROW(c) \
	c "A" c "B" c "C" c "D" c "E" c "F" c "G" c "H" c "I" c "J" c "K" c "L" c "M" c "N" c "O" c "P" \
	c "Q" c "R" c "S" c "T" c "U" c "V" c "W" c "X" c "Y" c "Z" c "a" c "b" c "c" c "d" c "e" c "f" \
	c "g" c "h" c "i" c "j" c "k" c "l" c "m" c "n" c "o" c "p" c "q" c "r" c "s" c "t" c "u" c "v" \
	c "w" c "x" c "y" c "z" c "0" c "1" c "2" c "3" c "4" c "5" c "6" c "7" c "8" c "9" c "+" c "/"
static const char b64_pairs[] =
    ROW("A") ROW("B") ROW("C") ROW("D") ROW("E") ROW("F") ROW("G") ROW("H")
    ROW("I") ROW("J") ROW("K") ROW("L") ROW("M") ROW("N") ROW("O") ROW("P")
    ROW("Q") ROW("R") ROW("S") ROW("T") ROW("U") ROW("V") ROW("W") ROW("X")
    ROW("Y") ROW("Z") ROW("a") ROW("b") ROW("c") ROW("d") ROW("e") ROW("f")
    ROW("g") ROW("h") ROW("i") ROW("j") ROW("k") ROW("l") ROW("m") ROW("n")
    ROW("o") ROW("p") ROW("q") ROW("r") ROW("s") ROW("t") ROW("u") ROW("v")
    ROW("w") ROW("x") ROW("y") ROW("z") ROW("0") ROW("1") ROW("2") ROW("3")
    ROW("4") ROW("5") ROW("6") ROW("7") ROW("8") ROW("9") ROW("+") ROW("/");
#undef ROW
/* clang-format on */

/* The two characters encoding the 12 bits v at d. */
static inline void put_pair(char *d, size_t v)
{
	memcpy(d, b64_pairs + 2 * v, 2);
}

/* The 8 bytes at p as a big-endian number (compilers make this one load). */
static inline uint64_t be64(const unsigned char *p)
{
	return (uint64_t)p[0] << 56 | (uint64_t)p[1] << 48 | (uint64_t)p[2] << 40 |
	       (uint64_t)p[3] << 32 | (uint64_t)p[4] << 24 | (uint64_t)p[5] << 16 |
	       (uint64_t)p[6] << 8 | p[7];
}

size_t gpuq_base64_encode(const void *src, size_t n, char *dst)
{
	static const char tab[] = B64_ALPHABET;
	const unsigned char *s = src;
	char *d = dst;
	size_t i = 0;

	for (; n - i >= 8; i += 6) { /* two groups at once, from one 8-byte read */
		uint64_t v = be64(s + i) >> 16;

		put_pair(d, v >> 36);
		put_pair(d + 2, v >> 24 & 0xfff);
		put_pair(d + 4, v >> 12 & 0xfff);
		put_pair(d + 6, v & 0xfff);
		d += 8;
	}
	for (; n - i >= 3; i += 3) { /* whole groups of three: two pairs each */
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];

		put_pair(d, v >> 12);
		put_pair(d + 2, v & 0xfff);
		d += 4;
	}
	if (i < n) { /* the last one or two bytes, padded */
		uint32_t v = (uint32_t)s[i] << 16;

		if (n - i > 1)
			v |= (uint32_t)s[i + 1] << 8;
		d[0] = tab[(v >> 18) & 63];
		d[1] = tab[(v >> 12) & 63];
		d[2] = '=';
		d[3] = '=';
		if (n - i > 1)
			d[2] = tab[(v >> 6) & 63];
		d += 4;
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
